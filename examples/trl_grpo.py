"""Train a model with GRPO (TRL) on an openenv-mcp environment: the environment owns tools, tasks and reward.

    pip install 'openenv-mcp[trl]'
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env files --max-steps 200

``--env`` is a built-in name, an env file or a server URL (``openenv-mcp serve ENV`` elsewhere).
``--model`` is a Hub id or a local ``from_pretrained`` folder; its chat template must support
tools (Qwen3's does). Each optimizer step generates ``--num-generations`` rollouts of one task
(a GRPO group: ``repeat``), the model calling the environment's tools, and learns from the
rewards the environment computes.
"""

from __future__ import annotations

import argparse
import os


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="Hub model id or local model folder")
    parser.add_argument("--env", default="files", help="environment: built-in name, env file or server URL")
    parser.add_argument("--max-steps", type=int, default=100, help="optimizer steps")
    parser.add_argument("--num-generations", type=int, default=8, help="rollouts per task (GRPO group size)")
    parser.add_argument("--groups-per-step", type=int, default=1, help="tasks (GRPO groups) per optimizer step")
    parser.add_argument("--max-completion-length", type=int, default=1024, help="tokens per rollout, tool results included")
    parser.add_argument("--max-tool-calls", type=int, default=10, help="tool-calling rounds per rollout")
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--output-dir", default="grpo-openenv-mcp")
    parser.add_argument("--cpu", action="store_true", help="train on CPU (tests, tiny models)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental in TRL
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from openenv_mcp.integrations.trl import environment_factory

    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.num_generations * args.groups_per_step,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=args.cpu,
        bf16=not args.cpu,
        seed=args.seed,
    )
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model)
    # No dataset: each rollout's reset() returns the task prompt; repeat=num_generations makes every group
    # num_generations episodes of one task, each with its own seed.
    with environment_factory(args.env, repeat=args.num_generations, seed=args.seed) as factory:
        trainer = GRPOTrainer(model=model, args=config, processing_class=tokenizer,
                              environment_factory=factory, callbacks=[factory.callback()])
        trainer.train()
        key = f"rewards/{factory.tool_class.__name__}/mean"
        rewards = [row[key] for row in trainer.state.log_history if key in row]
    print(f"trained {trainer.state.global_step} step(s) on {args.env}; environment reward per step: {rewards}")
    trainer.save_model(args.output_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
