"""Horovod's elastic State: what a training function commits, restores after a failure and brings
every rank to before it trains (sync). Framework bindings subclass it (kolo.torch.elastic.TorchState)."""
import pickle

from kolo._errors import KoloError
from kolo.elastic import runner


class State:
    """`bcast_object(obj, root_rank)` and `get_rank()` come from the framework's binding."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks = []
        self._commit_number = -1
        # The rank whose state the others take in sync(): 0, or the holder of the newest commit
        # when a restarted job resumes.
        self.sync_root_rank = 0

    def register_reset_callbacks(self, callbacks):
        """Functions called (no arguments) once the job has re-formed after a reset, before training
        goes on: to scale the learning rate to the new size, say."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp=None, update_res=None):
        """Horovod's driver calls this; kolo learns of new hosts from kolorun (see runner)."""

    def commit(self):
        """Saves the state as the point to go back to and, under an elastic kolorun, keeps it in
        memory on every host; then checks for new hosts (HostsUpdatedInterrupt)."""
        self.save()
        self._commit_number += 1
        runner.persist(self)
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank alike when kolorun found new hosts."""
        if runner.hosts_changed_everywhere():
            raise runner.HostsUpdatedInterrupt(False)

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()

    def reset(self):
        pass

    # The restart path: the saved state written to a file, and back from its bytes.
    def serialize(self, file):
        raise NotImplementedError()

    def deserialize(self, payload):
        raise NotImplementedError()


class ObjectState(State):
    """Attributes of any picklable kind (epoch=0, batch=0, ...), saved, restored and synced."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object, get_rank)

    def save(self):
        self._saved_state = {k: getattr(self, k) for k in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state, self.sync_root_rank)
            self._set_attrs()

    def serialize(self, file):
        pickle.dump(self._saved_state, file)

    def deserialize(self, payload):
        self._saved_state = pickle.loads(payload)
        self._set_attrs()

    def _set_attrs(self):
        for k, v in self._saved_state.items():
            setattr(self, k, v)


class VariablesState(ObjectState):
    """A framework's variables (a list that may grow, as an optimizer builds its own) and anything
    else: values saved as NumPy arrays by commit(), assigned back by restore(), broadcast by sync()
    (which saves them too, so that restore() after it gives the synced values). Subclasses say which
    variables there are, how to read one, and how to broadcast them."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved = []
        super().__init__(bcast_object, get_rank, **kwargs)
        self._save_values()

    def _variables(self):
        raise NotImplementedError()

    def _value(self, variable):
        raise NotImplementedError()

    def _broadcast(self, variables, root_rank):
        raise NotImplementedError()

    def _save_values(self):
        self._saved = [(v, self._value(v)) for v in self._variables()]

    def save(self):
        self._save_values()
        super().save()

    def restore(self):
        for v, value in self._saved:
            v.assign(value)
        super().restore()

    def sync(self):
        variables = self._variables()
        if variables:
            self._broadcast(variables, self.sync_root_rank)
        self._save_values()
        super().sync()

    def serialize(self, file):
        pickle.dump({"values": [value for _, value in self._saved], "attrs": self._saved_state}, file)

    def deserialize(self, payload):
        data = pickle.loads(payload)
        variables = self._variables()
        if len(variables) != len(data["values"]):
            raise KoloError("kolo.elastic: the commit has %d variables, this state %d"
                            % (len(data["values"]), len(variables)))
        self._saved = list(zip(variables, data["values"]))
        self._saved_state = data["attrs"]
        self.restore()
