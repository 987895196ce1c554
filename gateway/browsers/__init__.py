"""Browsers on hosts: finding them, one CDP connection each, their tabs, the registry."""
