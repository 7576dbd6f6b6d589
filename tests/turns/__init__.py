"""Turn-taking tests: strategies, timeouts and mute rules in virtual time."""
