"""Side outputs for review: plan (bill of materials), generated configs, update-safety diff."""
