"""The capacity window: what fmcluster does around the fixed end of a Capacity Block (plan.py: the windows and their
timings, resolved once; render_window.py + templates/: the head node's end-of-window script; construct.py: the
EventBridge rule on EC2's expiration warning, its Run Command and alert-topic targets; the budget;
construct_fleet_stop.py: the budget's stop topic and the function that runs each orchestrator's fleet stop);
docs/capacity.md "The capacity window" and "Budget"."""

USES = ("node",)
