"""The loop's counts, computed once, here: how many env steps an iteration is, how many
iterations a chunk (an evaluation period), how many chunks a run, how many updates the
agent's schedules span.

    schedule = Schedule.create(num_envs=8, num_steps=128, total_env_steps=500_000,
                               eval_every=50_000)
    schedule.steps_per_iteration    # 1024
    schedule.iterations_per_chunk   # 48
    schedule.num_chunks             # 10

The config's loop section gives the raw numbers (acl.config.LoopConfig.schedule); the
loop, the composition root and the run read only this.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Schedule:
    """What one seed's run is made of, in iterations (rollout, agent and teacher update)."""

    num_envs: int
    """Env instances per seed, stepped as one vmapped batch."""
    num_steps: int
    """Steps each instance takes per iteration."""
    iterations_per_chunk: int
    """Iterations between two evaluations on the test set."""
    num_chunks: int
    """Chunks (evaluations) of the run."""
    reinit_iterations: int
    """Iterations between re-initialisations of the student; 0: never."""
    agent_updates: int
    """Update calls the agent's schedules (learning-rate annealing) span."""
    tasks_logged_per_iteration: int
    """Tasks of each iteration kept for the curriculum record (`tasks.csv`)."""

    @property
    def steps_per_iteration(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def steps_per_chunk(self) -> int:
        return self.iterations_per_chunk * self.steps_per_iteration

    @property
    def iterations(self) -> int:
        """Iterations of the whole run."""
        return self.num_chunks * self.iterations_per_chunk

    @property
    def env_steps(self) -> int:
        """Env steps of the whole run, per seed: a whole number of chunks, so at most the
        asked-for total."""
        return self.num_chunks * self.steps_per_chunk

    @classmethod
    def create(
        cls,
        *,
        num_envs: int,
        num_steps: int,
        total_env_steps: int,
        eval_every: int,
        reinit_every: int = 0,
        lr_schedule_updates: int = 0,
        task_log_size: int = 64,
    ) -> Schedule:
        """The schedule of a run of `total_env_steps` per seed, evaluated every
        `eval_every` steps (both rounded down to whole iterations, at least one);
        `reinit_every` env steps between re-initialisations of the student (0: never);
        `lr_schedule_updates` the agent's annealing span (0: the run's updates, or one
        student's life when it is re-initialised); `task_log_size` tasks logged per chunk."""
        steps_per_iteration = num_envs * num_steps
        iterations_per_chunk = max(1, eval_every // steps_per_iteration)
        num_chunks = max(1, total_env_steps // (iterations_per_chunk * steps_per_iteration))
        reinit_iterations = max(1, reinit_every // steps_per_iteration) if reinit_every else 0
        if lr_schedule_updates:
            agent_updates = lr_schedule_updates
        elif reinit_every:
            agent_updates = reinit_iterations
        else:
            agent_updates = total_env_steps // steps_per_iteration
        return cls(
            num_envs=num_envs,
            num_steps=num_steps,
            iterations_per_chunk=iterations_per_chunk,
            num_chunks=num_chunks,
            reinit_iterations=reinit_iterations,
            agent_updates=agent_updates,
            tasks_logged_per_iteration=max(1, task_log_size // iterations_per_chunk),
        )
