"""Per-language knowledge the default sentence tokenizer needs: abbreviations and ordinals.

A period after "Dr" or before "3. Oktober" does not end a sentence; which words
behave that way depends on the language, so each language gets a small profile.
Scripts with their own terminators (CJK, Indic, Arabic, ...) need no profile: their
marks are unambiguous. Unknown languages fall back to English, whose abbreviations
are common in any text (names, "e.g.").
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "LanguageProfile",
    "language_profile",
    "normalize_language",
    "register_language",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class LanguageProfile:
    """What a period means in one language.

    Words are compared lower-cased, without the final period, keeping inner periods
    ("e.g", "z.b", "u.s").

    Attributes:
        code: Base language code ("en", "de").
        abbreviations: Words after which a period never ends a sentence when more text
            follows: titles ("dr") and Latin shorthands ("e.g", "vs").
        number_abbreviations: Words after which a period does not end a sentence when a
            number follows ("no. 5", "fig. 3", "jan. 5").
        months: Full month names; in languages with ``dot_ordinals`` a number and a
            period before one is a date ("3. Oktober").
        ordinal_context: Words that announce an ordinal ("der 3. Platz", "am 3.").
        dot_ordinals: Whether "3." can be an ordinal number (German and others).
        not_initials: Single capital letters that are words, not initials ("I").
        semicolon_is_question: Whether ";" is the question mark (Greek).
    """

    code: str
    abbreviations: frozenset[str] = field(default_factory=frozenset)
    number_abbreviations: frozenset[str] = field(default_factory=frozenset)
    months: frozenset[str] = field(default_factory=frozenset)
    ordinal_context: frozenset[str] = field(default_factory=frozenset)
    dot_ordinals: bool = False
    not_initials: frozenset[str] = field(default_factory=frozenset)
    semicolon_is_question: bool = False

    def extended(
        self,
        *,
        abbreviations: frozenset[str] | set[str] | None = None,
        number_abbreviations: frozenset[str] | set[str] | None = None,
    ) -> LanguageProfile:
        """A copy knowing extra words, for a domain's own shorthands."""
        return LanguageProfile(
            code=self.code,
            abbreviations=self.abbreviations | {w.lower() for w in abbreviations or ()},
            number_abbreviations=self.number_abbreviations
            | {w.lower() for w in number_abbreviations or ()},
            months=self.months,
            ordinal_context=self.ordinal_context,
            dot_ordinals=self.dot_ordinals,
            not_initials=self.not_initials,
            semicolon_is_question=self.semicolon_is_question,
        )


# Shorthands seen in text of any language (names, Latin).
_UNIVERSAL = _words("mr mrs ms mx dr prof e.g i.e vs cf viz")

_EN = LanguageProfile(
    code="en",
    abbreviations=_UNIVERSAL
    | _words(
        "rev fr st mt messrs mmes gen col capt cpt lt sgt maj cmdr adm gov sen rep pres "
        "supt insp det hon pvt cpl brig v approx ca incl esp a.k.a w.r.t"
    ),
    number_abbreviations=_words(
        "no nos nr fig figs vol vols p pp ch chap sec sect art eq eqs ex op ref refs tel ext "
        "jan feb mar apr jun jul aug sep sept oct nov dec"
    ),
    not_initials=_words("i a"),
)

_DE = LanguageProfile(
    code="de",
    abbreviations=_UNIVERSAL
    | _words(
        "hr hrn fr frl dipl ing mag st z.b bzw ca d.h u.a u.ä vgl ggf evtl inkl exkl sog "
        "bspw i.d.r u.u o.ä z.t z.zt allg z d u s o v i"
    ),
    number_abbreviations=_words(
        "nr s abs art bd kap tel abb tab jan feb mär märz apr jun jul aug sep sept okt nov dez"
    ),
    months=_words(
        "januar jänner februar märz april mai juni juli august september oktober november dezember"
    ),
    ordinal_context=_words(
        "der die das den dem des am im vom zum zur beim ab bis seit vor zu jeden jedem jeder"
    ),
    dot_ordinals=True,
)

_FR = LanguageProfile(
    code="fr",
    abbreviations=_UNIVERSAL
    | _words("mme mmes mlle mlles me mgr pr st ste mm p.ex c.-à-d c-à-d env av apr ex"),
    number_abbreviations=_words(
        "n no p pp vol chap art fig tél janv févr fév avr juil sept oct nov déc"
    ),
    not_initials=_words("a y"),
)

_ES = LanguageProfile(
    code="es",
    abbreviations=_UNIVERSAL
    | _words("sr sra srta sres dra d dña lic ing sto sta ud uds vd vds p.ej ee uu aprox av avda"),
    number_abbreviations=_words(
        "no núm n pág págs p pp art cap vol fig tel ene feb mar abr may jun jul ago sep sept "
        "set oct nov dic"
    ),
    not_initials=_words("a y o e u"),
)

_IT = LanguageProfile(
    code="it",
    abbreviations=_UNIVERSAL
    | _words("sig sig.ra sigg dott dott.ssa ing avv on geom arch rag p.es es"),
    number_abbreviations=_words(
        "n pag pagg art cap vol fig tel gen feb mar apr mag giu lug ago set ott nov dic"
    ),
    not_initials=_words("a e o i"),
)

_PT = LanguageProfile(
    code="pt",
    abbreviations=_UNIVERSAL | _words("sr sra srta dra eng exmo exma v.exa p.ex ex"),
    number_abbreviations=_words(
        "n nº pág art cap vol fig tel jan fev mar abr mai jun jul ago set out nov dez"
    ),
    not_initials=_words("a e o"),
)

_NL = LanguageProfile(
    code="nl",
    abbreviations=_UNIVERSAL | _words("dhr mevr mw ir ing drs bijv d.w.z m.a.w o.a i.p.v"),
    number_abbreviations=_words(
        "nr blz art fig tel jan feb mrt apr jun jul aug sep sept okt nov dec"
    ),
)

_EL = LanguageProfile(
    code="el",
    abbreviations=_EN.abbreviations | _words("κ.λπ κ.ά π.χ δηλ βλ κος κα"),
    number_abbreviations=_EN.number_abbreviations | _words("αρ σελ"),
    semicolon_is_question=True,
)

_PROFILES: dict[str, LanguageProfile] = {
    p.code: p for p in (_EN, _DE, _FR, _ES, _IT, _PT, _NL, _EL)
}


def normalize_language(language: str | None) -> str:
    """The base code of ``language``: "en_US" → "en", "" / "auto" / None → "en"."""
    if not language:
        return "en"
    code = language.strip().lower().replace("_", "-").split("-", 1)[0]
    return "en" if code in ("", "auto") else code


def language_profile(language: str | None) -> LanguageProfile:
    """The profile for ``language``; English for languages without one."""
    code = normalize_language(language)
    profile = _PROFILES.get(code)
    if profile is None:
        profile = _PROFILES.setdefault(
            code,
            LanguageProfile(
                code=code,
                abbreviations=_EN.abbreviations,
                number_abbreviations=_EN.number_abbreviations,
            ),
        )
    return profile


def register_language(profile: LanguageProfile) -> None:
    """Make ``profile`` the default for its language code, process-wide."""
    _PROFILES[normalize_language(profile.code)] = profile
