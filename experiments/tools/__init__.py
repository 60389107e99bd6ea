"""Run tools: `acl run`, `compare`, `evaluate`, `benchmark`, `report`, `risk`,
`render-maze-levels`, `hparams-docs` (experiments.commands)."""
