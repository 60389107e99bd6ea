"""Paper reproductions: `acl toy-bandit`, `reference-teachers`, `bit-flip`,
`goal-curricula`, `jsrl`, `reverse-curriculum`, `svgg`, `stump-tracks-ppo`, `ued-mazes`
(experiments.commands); `comparison` is what the method comparisons share."""
