"""Reward templates (string.Template files), a package so that wheels ship the .py.tmpl files."""
