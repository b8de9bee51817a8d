"""The runtime: the world (Game), the schedule (the one system order), the scenario runner and trace."""
