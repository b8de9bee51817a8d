"""esper processors: thin systems that call anim/ (no pygame). Their order: game/schedule.py."""
