"""Bringing every rank to the same state: variables and arbitrary Python objects."""
import tensorflow as tf

from kolo import _host_objects
from kolo._process_sets import global_process_set
from kolo.tensorflow import mpi_ops


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=False):
    """Sets every variable to its value on root_rank (after the first step, or before training), in
    one request of as many broadcasts. Works eagerly and inside tf.function."""
    variables = list(variables)
    base = mpi_ops._name(None, "broadcast_variables", process_set)
    assigns = [v.assign(mpi_ops.broadcast(v.read_value() if hasattr(v, "read_value") else tf.convert_to_tensor(v),
                                          root_rank, name="%s.%d" % (base, i), process_set=process_set))
               for i, v in enumerate(variables)]
    # In a TensorFlow 1 graph the assignments happen when the session runs this op, as Horovod's.
    return None if tf.executing_eagerly() else tf.group(*assigns)


def broadcast_global_variables(root_rank):
    """TensorFlow 1's graph mode: an op that sets every global variable to its value on root_rank (run
    it in the session, as Horovod's). Eagerly there is no such collection: use broadcast_variables."""
    if tf.executing_eagerly():
        raise RuntimeError("broadcast_global_variables() needs a TensorFlow 1 graph (tf.compat.v1); eagerly, "
                           "pass the variables: kolo.tensorflow.broadcast_variables(model.variables, root_rank)")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """TensorFlow 1's MonitoredTrainingSession: sets every global variable to its value on root_rank once
    the session exists (after the variables are initialized or restored), as Horovod's hook does."""

    def __init__(self, root_rank, device="", process_set=global_process_set):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.process_set = process_set
        self.bcast_op = None

    def begin(self):
        # A new graph (MonitoredTrainingSession builds one per session) needs its own op.
        if self.bcast_op is None or self.bcast_op.graph is not tf.compat.v1.get_default_graph():
            with tf.device(self.device):
                self.bcast_op = broadcast_variables(tf.compat.v1.global_variables(), self.root_rank,
                                                    process_set=self.process_set)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=global_process_set):
    """root_rank's `obj` (anything pickle takes) on every rank (of the set). Eager (session: Horovod's
    TF1 argument, not needed)."""
    return _host_objects.broadcast_object(obj, root_rank, name, process_set)


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """Every rank's `obj` (anything pickle takes), as a list in the set's rank order."""
    return _host_objects.allgather_object(obj, name, process_set)


def broadcast_object_fn(root_rank=0, session=None, name=None, process_set=global_process_set):
    """A function that broadcasts an object from root_rank each time it is called (Horovod's form for
    TensorFlow 1 sessions; here it calls broadcast_object)."""
    return lambda obj: broadcast_object(obj, root_rank, name=name or "broadcast_object_fn", process_set=process_set)
