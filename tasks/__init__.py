"""Registered agent tasks: each subpackage is one task (``docs/tasks.md``).

A task declares, in its own package, everything that differs from one kind of agent work to
another (:class:`tasks.spec.TaskSpec`): its work-key suffix, trigger mapping, target reader and
freshness rule, policy, prompt, tools and their activities, and its effect operations. Intake,
the agent loop and the ledger are generic over it; :mod:`tasks.registry` finds the tasks.

Layer: below ``workflows``, above ``sluicegate.config``, ``intake`` and ``sluicegate.forge``
(``.importlinter``). Never imports the ledger, activities or workflows.
"""
