"""Runs this task with ShinkaEvolve itself (pip install shinka-evolve):

    python run_evo.py

Galapagos does not run this script. It reads `task_sys_msg` from it, the
message ShinkaEvolve gives the model as its system prompt, and gives the
model the same one.
"""

task_sys_msg = """You are tuning a cubic polynomial so that it follows exp(x) on the interval [-1, 1].

The program defines COEFFS = [c0, c1, c2, c3] and approx(x) = c0 + c1*x + c2*x**2 + c3*x**3. Only the four
coefficients should change. The score is 1 / (1 + 20 * rmse), where rmse is the root-mean-square error against
exp(x) on 81 evenly spaced points; the evaluator also reports the largest error and where it is.

Useful facts: the Taylor coefficients of exp(x) at 0 are 1, 1, 1/2 and 1/6, but a least-squares fit over the whole
interval does better than the Taylor cubic near the ends. Keep approx finite everywhere on [-1, 1]."""


def main():
    from shinka.core import EvolutionConfig, ShinkaEvolveRunner
    from shinka.database import DatabaseConfig
    from shinka.launch import LocalJobConfig

    runner = ShinkaEvolveRunner(
        evo_config=EvolutionConfig(
            task_sys_msg=task_sys_msg,
            patch_types=["diff", "full"],
            patch_type_probs=[0.8, 0.2],
            num_generations=40,
            language="python",
            init_program_path="initial.py",
            results_dir="results/exp_poly_shinka",
            embedding_model=None,
        ),
        job_config=LocalJobConfig(eval_program_path="evaluate.py"),
        db_config=DatabaseConfig(num_islands=2, archive_size=20),
    )
    runner.run()


if __name__ == "__main__":
    main()
