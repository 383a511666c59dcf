"""Step 1 of load -> plan -> lint -> render: typed, validated YAML (cluster descriptors, workloads,
project defaults), with one clear `file:line:col: key path: expected ...` line for any bad input."""
