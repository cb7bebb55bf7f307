"""Reading a class: whose each submission is (the layouts schools collect in), the notebooks and their lesson, the
cells that run, and the static checks made before anything runs."""
