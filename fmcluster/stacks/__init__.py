"""Thin stacks that compose constructs; ``build.build_app`` is the only place that hands blueprint
sections to constructs."""
