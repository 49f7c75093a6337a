"""The baseline for ``synth_bench.py --cli``: a bare CDK app with one S3 bucket, same venv and CLI as app.py."""

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3

app = cdk.App()
s3.Bucket(cdk.Stack(app, "Bare"), "Bucket")
app.synth()
