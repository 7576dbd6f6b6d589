"""End-to-end tests: a real recording through the VAD, the turn strategies and the pair, in virtual time."""
