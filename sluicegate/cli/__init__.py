"""``starter.py``'s sub-commands. Top layer: nothing below imports it."""
