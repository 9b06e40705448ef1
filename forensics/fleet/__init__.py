"""Many hosts: the inventory, the sweep, its lock, schedule, history store and fleet report."""
