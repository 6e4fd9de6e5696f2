"""trial.split_feedback: the closing feedback leaves the answer, and nothing of the answer goes with it."""

from mcptrials.run.trial import split_feedback


def test_a_closing_code_fence_stays_in_the_answer():
    text = "The total is 67.85:\n```\n66.30 - 7.47 + 4.90 + 4.12\n```\n\n**Feedback on the tools:** grep was enough."
    answer, feedback = split_feedback(text)
    assert answer.endswith("```"), answer  # with `^\W*` the fence went into the feedback
    assert answer.count("```") == 2
    assert feedback == "**Feedback on the tools:** grep was enough."


def test_heading_markup_is_part_of_the_feedback():
    answer, feedback = split_feedback("Answer.\n\n## Feedback on the tools: fine")
    assert (answer, feedback) == ("Answer.", "## Feedback on the tools: fine")


def test_no_feedback_leaves_the_text_whole():
    assert split_feedback("Only an answer.") == ("Only an answer.", "")
