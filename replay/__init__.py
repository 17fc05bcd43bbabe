"""Replay captured request traces through a vLLM V1-style paged KV cache to reproduce a cache fault.

`replay.run.run(trace, policy)` replays one policy; `replay.run.all_policies` replays the
correct policy and every fault variant; `replay.policies.BUILTIN` lists them.
"""
