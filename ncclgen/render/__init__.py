"""Step 4 of load -> plan -> lint -> render: text from a Plan only (sbatch scripts, Kubernetes
manifests). No tuning logic lives here: every decision is in the plan."""
