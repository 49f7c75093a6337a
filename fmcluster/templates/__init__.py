"""Jinja templates (StrictUndefined) and the typed contexts they render from. No AWS calls."""
