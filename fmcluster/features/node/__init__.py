"""The node: everything fmcluster puts on and checks on a GPU node. The image per group and its lock (plan_image.py), the
bake targets (plan_bake.py), the render context and the node contract (render_context.py), the boot script and node
check (render_scripts.py, templates/), the EC2 Image Builder steps (render_image_build.py), the bootstrap asset and the
image build (construct_bootstrap.py, construct_image.py), the <name>-image stack (stack_image.py) and the image,
bake and software rules (rules_image.py, rules_bake.py, rules_software.py); docs/software.md."""

USES = ("network", "observability")
