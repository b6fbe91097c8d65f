"""The page: HTML, CSS and ES modules, served as they are (this file makes them package data)."""
