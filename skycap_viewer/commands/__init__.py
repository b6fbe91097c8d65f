"""The terminal commands: `check`, `show`, `summary`, and what they share for a terminal."""
