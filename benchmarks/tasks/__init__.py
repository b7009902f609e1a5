"""Real tasks for the agent, each with a checker, and a runner that scores models on them.

python benchmarks/tasks/run.py --model local:qwen2.5-coder-1.5b
"""
