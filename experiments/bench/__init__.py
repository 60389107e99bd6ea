"""Benchmarks and profiles: `acl bench-*`, `profile-maze-student`, `checkpoint-size`,
`gmm-k-range` (experiments.commands)."""
