#!/usr/bin/env bash
# Install the SageMaker HyperPod dependency Helm chart, pinned to https://github.com/aws/sagemaker-hyperpod-cli.git at 011ca927123e02b35a399935bbb3ab1905fe33c7
# (chart helm_chart/HyperPodHelmChart). Run after `cdk deploy` of the EKS stack and before the cluster stack: HyperPod
# expects the chart before it joins nodes. Rendered by fmcluster.
set -euo pipefail
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
aws eks update-kubeconfig --region us-east-1 --name hp-eks --role-arn arn:aws:iam::123456789012:role/eks-admins
git clone --quiet https://github.com/aws/sagemaker-hyperpod-cli.git "${work}/cli"
git -C "${work}/cli" checkout --quiet 011ca927123e02b35a399935bbb3ab1905fe33c7
helm dependency update "${work}/cli/helm_chart/HyperPodHelmChart"
# cert-manager's startupapicheck is a post-install hook Job (cert-manager chart values.yaml startupapicheck.enabled,
# default true): with no nodes yet it never schedules and Helm times out, so it is off; upgrade --install is idempotent.
helm upgrade --install hyperpod-dependencies "${work}/cli/helm_chart/HyperPodHelmChart" \
  --namespace kube-system \
  --set cert-manager.enabled=true \
  --set cert-manager.startupapicheck.enabled=false
