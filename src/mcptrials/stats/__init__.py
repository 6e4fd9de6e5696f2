"""Statistics for small evaluation sets: one function per formula, one module per family.

    pass_k        pass@k and pass^k of a task, and their means over tasks
    intervals     the mean with its (clustered) standard error and t interval; the bounded
                  (logit-transformed) interval of a 0-1 score; Wilson's interval of a proportion
    paired        paired differences of two tools, Holm's adjustment, the non-inferiority margin test
    power         variance components, minimal detectable effect, scenarios needed
    agreement     the judge's spread over repeats, ICC(1,1), Spearman's rho with a bootstrap interval
    fairness      a trial's fairness score, its efficiency component, and its weights when some
                  of its parts are missing (the weights: the config)
    adoption      a trial's adoption score (reported, never part of fairness)
    ppi           the prediction-powered estimate of a rate (a grader's rate corrected by a
                  reader's labels on a sample), with its interval
    sequential    confidence sequences of a bounded mean (anytime-valid: looked at after every
                  wave) and the decision against a margin read off them
    shapley       each tool's Shapley value over a server's tools: exact, and the
                  permutation-sampling estimate with its standard error

Every function names its formula and its source in its docstring, and is tested
against a hand-computed case in tests/analyze/test_stats.py (sequential: in
tests/analyze/test_sequential_stats.py; ppi and Wilson in tests/analyze/test_ppi.py; shapley in
tests/analyze/test_shapley.py). Results are plain floats,
ints, lists, dicts and None (never NaN), so they go straight into JSON. Callers import a
function from the module that owns it (mcptrials.stats.intervals.mean_ci).

Sources:
  Chen et al. 2021, "Evaluating Large Language Models Trained on Code", arXiv 2107.03374
  Yao et al. 2024, "tau-bench", arXiv 2406.12045
  Miller 2024, "Adding Error Bars to Evals", arXiv 2411.00640
  Inspect AI, scorer/_metrics/std.py (clustered SE with the C/(C-1) correction)
  Holm 1979, "A Simple Sequentially Rejective Multiple Test Procedure", Scand. J. Statist. 6:65-70
  StataCorp, Stata Reference Manual, [R] proportion, Methods and formulas (the logit-transform interval)
  Cameron, Gelbach & Miller 2008, "Bootstrap-Based Improvements for Inference with Clustered Errors",
    Rev. Econ. Stat. 90(3):414-427
  Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, "Prediction-powered inference", Science 382:669-674
  Wilson 1927, "Probable inference, the law of succession, and statistical inference", JASA 22:209-212
  Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by betting", JRSS-B 86(1)
  Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
    sequences", Ann. Statist. 49(2)
  Shapley 1953, "A value for n-person games", Contributions to the Theory of Games II, 307-317
  Castro, Gomez & Tejada 2009, "Polynomial calculation of the Shapley value based on sampling",
    Computers & Operations Research 36(5):1726-1730
  Shrout & Fleiss 1979, "Intraclass Correlations: Uses in Assessing Rater Reliability",
    Psychol. Bull. 86(2):420-428

numpy and scipy are imported inside the functions that need them, so importing these
modules stays cheap.

May import: nothing of mcptrials but stats itself (the ground floor, beside core).
"""
