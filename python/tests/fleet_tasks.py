"""The pooled child the fleet suite's queue runs (drover.pool with @task):
each task appends its message id to $DONE_FILE."""
import os

import drover.pool


@drover.pool.task("record")
def record(envelope, ctx):
    with open(os.environ["DONE_FILE"], "a") as f:
        f.write(ctx.id + "\n")


if __name__ == "__main__":
    drover.pool.serve()
