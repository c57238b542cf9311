"""A scripted agent for `autokernel kernelbench run --proposer agent`: instead of asking a language
model, it writes one of the prepared solutions (tests/kernelbench/solutions) to $AK_KB_SOLUTION.

    scripted_agent.py NAME               the solution NAME.py on every attempt
    scripted_agent.py NAME,NAME2,...     NAME on the first attempt, NAME2 on the second, ...;
                                         from the second on, only if the prompt says why the
                                         last attempt was rejected (the loop must tell it)
"""
import os
import pathlib
import shutil
import sys

SOLUTIONS = pathlib.Path(__file__).resolve().parents[1] / "solutions"

names = sys.argv[1].split(",")
attempt = int(os.environ["AK_KB_ATTEMPT"])
prompt = pathlib.Path(os.environ["AK_KB_PROMPT"]).read_text()
if "class Model" not in prompt:
    sys.exit("the prompt does not show the problem")
if attempt > 1 and "previous attempt was judged" not in prompt:
    sys.exit("the prompt does not say how the last attempt was judged")
shutil.copy(SOLUTIONS / f"{names[min(attempt, len(names)) - 1]}.py", os.environ["AK_KB_SOLUTION"])
