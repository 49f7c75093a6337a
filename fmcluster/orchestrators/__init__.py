"""Orchestrators: the profile contract (profile.py), the registry (registry.py) and one folder per orchestrator."""
