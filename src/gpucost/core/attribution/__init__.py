"""Learned attribution of untagged GPU workloads: features, a calibrated model, top-3 and quality.

Modules: :mod:`.features` (one feature dict per workload, history on both sides in time),
:mod:`.model` (the regression and its second stage), :mod:`.calibration` (top-label Platt scaling,
the threshold for a target accuracy), :mod:`.pipeline` (one training: :func:`attribute`, the
:class:`~.pipeline.Scorer` a model version stores, the rows of the dbt model), :mod:`.versions`
(when a build retrains, the stored fitted state, what a build that does not retrain scores),
:mod:`.quality` (money-weighted coverage, accuracy, calibration error:
the one definition ``rpt_attribution_quality`` and ``gpucost benchmark-attribution`` both read).

The warehouse resolves a workload's project from a valid label, a human override or a declarative
rule first; what is left is predicted here from the workloads whose project is known (labels and
overrides) in a trailing window, retrained when its labels, settings or schedule say so
(:mod:`.versions`). Pure functions: no dbt, no database.

Signals (the four families of the design brief), one feature dict per workload:

* code fingerprints: image repository, tag family and digest, tokens of the pod / job / app names,
  of the launch line (container command + args from the pod spec, or a Slurm SubmitLine), working
  directory and mounted volume claims, and their words once more in one vocabulary (a dataset
  read by a job and mounted as a notebook's cache is one feature);
* resource patterns: GPU count and model, duration, GPU utilisation mean / p95 / burstiness;
* temporal relationships: the project of the same user's (on the same cluster) / namespace's / job
  family's previous known workload, the job that ended just before on the same user's account
  (pipelines), the earlier job whose output this one reads (lineage: its name in this one's
  paths), the hour of day and day of week; a workload without a user label reads the history of
  the person who created it (an admission webhook's annotation: :func:`creator_user`), else of
  the user its owner or volume claims name (a notebook server ``jupyter-alice``); and the other
  side: the same user's / namespace's / job family's *next* known workload, and the known workloads
  that later read this one's output;
* user behaviour: the user's and the namespace's project mix so far.

One training per model version (:func:`attribute`): a regression fitted on the older labelled
workloads, and a second stage over it (:class:`SharedLessons`: what a feature naming a project is
worth, learnt once for every project, on the regression's out-of-fold probabilities); calibrated
(top-label Platt scaling shrunk toward the identity) on those out-of-fold predictions and the
newest labelled workloads, measured on the newest; then the regression is continued on them.
Labelled workloads are shown to the model as the targets look (user / team labels masked as often
as the targets lack them: :func:`mask_draw`; a missing user read from the workload's creator, else
its owner or volume claims: :class:`UserInference`).

History features read the known projects of a workload's neighbours on both sides in time, **never
its own** (:func:`history_features`). The evaluation (:func:`holdout_predictions`) trains on earlier
workloads and tests on later ones, and nothing the measured checkpoint is fitted on reads a hold-out
label (a training workload's later side reads training labels only): a held-out workload's own label
cannot move its raw prediction.
"""

from gpucost.core.attribution.calibration import (
    TopLabelCalibrator,
    calibration_weights,
    threshold_for_accuracy,
)
from gpucost.core.attribution.features import (
    UserInference,
    creator_user,
    history_features,
    known_projects,
    label_patterns,
    mask_draw,
    project_teams,
    static_features,
    tokens,
)
from gpucost.core.attribution.model import (
    AttributionModel,
    Prediction,
    SharedLessons,
    continue_training,
    cross_fitted_confidences,
    fit,
    predict,
)
from gpucost.core.attribution.pipeline import (
    Attribution,
    attribute,
    attribution_rows,
    holdout_predictions,
    predict_untagged,
    prediction_rows,
)
from gpucost.core.attribution.quality import QualityReport, evaluate

__all__ = [
    "Attribution",
    "AttributionModel",
    "Prediction",
    "QualityReport",
    "SharedLessons",
    "TopLabelCalibrator",
    "UserInference",
    "attribute",
    "attribution_rows",
    "calibration_weights",
    "continue_training",
    "creator_user",
    "cross_fitted_confidences",
    "evaluate",
    "fit",
    "history_features",
    "holdout_predictions",
    "known_projects",
    "label_patterns",
    "mask_draw",
    "predict",
    "predict_untagged",
    "prediction_rows",
    "project_teams",
    "static_features",
    "threshold_for_accuracy",
    "tokens",
]
