"""The communicator: Comm, with allreduce and broadcast in their blocking, non-blocking
and persistent forms, barrier, the vector interface's keys (Comm.vec), and (from
collectives.py) allgather, reduce-scatter, reduce and the object collectives."""
import atexit
import sys
import weakref
from ctypes import Array, byref, c_char_p, c_void_p, create_string_buffer, sizeof
from threading import RLock, get_ident

from . import _buffers, _config, _wait
from .collectives import Collectives
from .group import Groups
from ._errors import IN_PROGRESS, _text, error
from ._lib import Stats, lib
from .op import SUM, CreatedOp, raise_failed
from .p2p import PointToPoint
from .partial import PartialRequest
from .request import PersistentRequest, Request
from .xchg import Exchanges

__all__ = ["Comm", "get_unique_id"]

_operands = _buffers.operands
_allreduce = lib.zcoll_allreduce
_iallreduce = lib.zcoll_iallreduce
_broadcast = lib.zcoll_broadcast
_ibroadcast = lib.zcoll_ibroadcast
_free = lib.zcoll_request_free
_MAIN = _wait.MAIN
_INVALID_ARG = 1
_wait_req = lib.zcoll_wait
# Which C call allreduce makes must not depend on the thread a rank calls from: on one
# host the blocking form of a small call goes through the mailboxes and that of a large one
# reads zcoll_mem_alloc memory where it lies, and a rank in one form cannot meet a peer in
# the other (Mismatch). So every thread makes the same call: the non-blocking form below
# this many bytes (the main thread waits in slices, for Ctrl-C), the blocking one from here
# on, which the main thread hands to the waiter thread. That hand-over cost 30-60 us here
# (two threads woken on an oversubscribed host): 20-50 % of a 1-4 MiB call in numpy's
# memory, under 8 % from 8 MiB, where reading comm.empty's arrays in place halves a call.
_BLOCKING_FROM = 8 << 20


_open = weakref.WeakSet()  # communicators not yet closed, for interpreter exit


@atexit.register
def _close_at_exit():
    # An uncaught exception ends the program: the ranks may be out of step, so tell
    # them (abort) rather than wait for them in a collective destroy.
    failed = hasattr(sys, "last_value")
    for comm in list(_open):
        comm._release(abort=failed)


def _mem_free(comm_ref, ptr):
    """An empty() array's memory, once nothing refers to it: back to its communicator while
    that is open (after its close the memory is the process's for good)."""
    comm = comm_ref()
    if comm is not None and comm._ptr is not None:
        lib.zcoll_mem_free(comm._ptr, ptr)


def get_unique_id():
    """A fresh id for a job (zcoll_get_unique_id), as 128 bytes: made by the process that
    will be rank 0, moved by the application (an MPI bcast, a file, a store) to every
    process, which then creates Comm(unique_id=..., rank=..., size=...). It holds rank 0's
    address and the job's secret key: treat it as a secret. Single use."""
    buf = create_string_buffer(128)
    st = lib.zcoll_get_unique_id(buf)
    if st:
        raise error(st)
    return buf.raw


def _check_unique_id(uid, rank, size):
    if not isinstance(uid, (bytes, bytearray, memoryview)) or len(bytes(uid)) != 128:
        raise TypeError("unique_id must be the 128 bytes zcoll.get_unique_id() returned")
    if not isinstance(rank, int) or not isinstance(size, int):
        raise TypeError("unique_id= needs rank= and size= (ints): this process's rank and the "
                        "number of ranks")


class Comm(Collectives, Exchanges, PointToPoint, Groups):
    """A zcoll communicator over all the ranks of the job.

    Comm() reads the rank, the size and the rendezvous address from the environment
    (zcoll_run, mpirun, srun set them; torchrun's WORLD_SIZE alone is refused, an
    InvalidArgument naming it: use the "zcoll" torch backend, or a unique id moved through
    torch's store); Comm(config={"ALGO": "ring", "TIMEOUT": 5})
    overrides ZCOLL_* settings from code. Comm(unique_id=zcoll.get_unique_id() moved from
    rank 0, rank=r, size=p) starts from an id instead (zcoll_comm_init_rank), whatever
    the environment says of ranks. Creating and closing are collective.

    Use it as a context manager (`with zcoll.Comm() as comm:`) or call close(); a Comm
    never closed is destroyed when it is collected, at the latest at interpreter exit
    (aborted if the program ends with an uncaught exception). When the block ends with
    an exception, the communicator is aborted: the peers get PeerFailed instead of
    waiting for this rank.
    A communicator is used by one thread at a time (a call from another thread while one
    is inside raises InvalidArgument, "used concurrently"); while a call waits for the
    peers the GIL is released, so other Python threads run.

    Ctrl-C: a collective on the main thread (allreduce, broadcast, Request.wait,
    Vec.get; not close) waits in slices, so that SIGINT raises
    KeyboardInterrupt within ~100 ms; the communicator is revoked first (the peers'
    collective fails with PeerFailed rather than waiting for this rank): close() or
    abort() it then, as the with block does.
    """

    def __init__(self, config=None, unique_id=None, rank=None, size=None):
        ptr = c_void_p()
        if unique_id is not None:
            _check_unique_id(unique_id, rank, size)
        elif rank is not None or size is not None:
            raise ValueError("rank= and size= go with unique_id= (zcoll.get_unique_id()); "
                             "without it they come from the launcher")
        cfg = _config.create(config) if config else None
        try:
            if unique_id is None:
                st = lib.zcoll_comm_init(byref(ptr), cfg)
            else:
                st = lib.zcoll_comm_init_rank(byref(ptr), bytes(unique_id), rank, size, cfg)
        finally:
            if cfg is not None:
                lib.zcoll_config_free(cfg)
        if st:
            raise error(st)
        self._adopt(ptr.value)

    def _adopt(self, ptr):
        """Takes the communicator at ptr (zcoll_comm_init's, or a split's)."""
        self._ptr = ptr
        self._orphans = []  # (request, buffers) dropped in flight; see request.py
        # Held by abort() and by a blocking call freeing its request: abort from another
        # thread frees the communicator's requests, and a handle freed after is dangling.
        self._free_lock = RLock()
        self._partials = weakref.WeakSet()  # partial requests open: close() frees them
        self._req = c_void_p()  # where a blocking call's request goes (_sliced)
        self._req_ref = byref(self._req)
        _open.add(self)
        #: This process's rank, 0 <= rank < size.
        self.rank = lib.zcoll_comm_rank(self._ptr)
        #: The number of ranks.
        self.size = lib.zcoll_comm_size(self._ptr)

    def _live(self, ptr):
        """ptr, if this communicator still exists (its requests die with it)."""
        if self._ptr is None:
            raise ValueError("the communicator is closed")
        return ptr

    @property
    def closed(self):
        return self._ptr is None

    @property
    def transport(self):
        """The transport chosen at init: "shm", "verbs", "ucx" or "loopback"."""
        return lib.zcoll_comm_transport(self._live(self._ptr)).decode()

    @property
    def device(self):
        """The device under each transport, in the same order: "rxe0:1" (verbs), "-" (shm)."""
        return lib.zcoll_comm_device(self._live(self._ptr)).decode()

    def stats(self):
        """The communicator's counters (zcoll_comm_stats_t) as a dict."""
        s = Stats()
        st = lib.zcoll_comm_stats(self._live(self._ptr), byref(s), sizeof(s))
        if st:
            raise error(st, self._ptr)
        return {name: list(v) if isinstance(v := getattr(s, name), Array) else v
                for name, _ in Stats._fields_}

    def algorithm(self, x, op=SUM):
        """The algorithm allreduce would use for x ("ring", ...). Local."""
        _, _, count, code, _, _ = _operands(x, x)
        name = c_char_p()
        st = lib.zcoll_allreduce_algorithm(self._live(self._ptr), count, code, op, byref(name))
        if st:
            raise error(st, self._ptr)
        return name.value.decode()

    def allreduce(self, x, out=None, op=SUM, dtype=None):
        """Reduces x over all ranks with op and returns the result.

        x: a C-contiguous numpy array or any object with the buffer protocol, of a
        dtype zcoll reduces (int8/uint8/int32/uint32/int64/uint64, float16, bfloat16,
        float32, float64). Nothing is copied: the library reads x's memory.
        out=None: the result goes into a new array of x's shape and dtype.
        out=x: in place (MPI_IN_PLACE), x receives the result.
        out=other: a writable C-contiguous buffer of x's dtype and element count.
        op: a zcoll.Op, or a created op (zcoll.op_create, zcoll.premul_sum); with an op
        created with dtype=, x may be an array of that dtype (a structured one too).
        dtype: reduce x's elements as this zcoll dtype, of the same size ("bfloat16" for a
        uint16 array of bfloat16 bits: no ml_dtypes needed). A torch bfloat16 tensor is
        bfloat16 by itself; out=None then returns the result's bits as uint16.
        Returns the result: the new array, or out itself.
        """
        if op.__class__ is CreatedOp:
            return self._allreduce_created(x, out, op, dtype)
        send, recv, count, code, result, keep = _operands(x, out, None, dtype)
        if self._group is not None:
            self._queue("allreduce", _iallreduce, (send, recv, count, code, op), keep)
            return result
        main = get_ident() == _MAIN
        if keep[0].nbytes >= _BLOCKING_FROM:
            ptr = self._live(self._ptr)
            if main:  # on the waiter thread, while this one looks at its signals
                st, detail = _wait.call(ptr, keep, _allreduce, ptr, send, recv, count, code, op)
            else:
                st, detail = _allreduce(ptr, send, recv, count, code, op), None
            if st:
                raise error(st, ptr, detail)
        elif main:
            self._sliced(_iallreduce, keep, send, recv, count, code, op)
        else:
            ptr = self._live(self._ptr)
            req = c_void_p()
            st = _iallreduce(ptr, send, recv, count, code, op, byref(req))
            if st:
                raise error(st, ptr)
            st = _wait_req(req)
            detail = self._drop(req.value, keep, st, None)
            if st:
                raise error(st, ptr, detail)
        return result

    def _sliced(self, issue, keep, *args):
        """A blocking collective on the main thread: issue(...) in its non-blocking form,
        waited for in slices (_wait.py; keep: the arrays it uses); raises its error.
        Inside a group: queued (group.py)."""
        if self._group is not None:
            return self._queue("collective", issue, args, keep)
        ptr = self._live(self._ptr)
        st = issue(ptr, *args, self._req_ref)
        if st:
            raise error(st, ptr)
        r = self._req.value
        st, detail = _wait.end(ptr, r, keep)  # on an exception, end() disposed of r
        detail = self._drop(r, keep, st, detail)
        if st:
            raise error(st, ptr, detail)

    def _drop(self, req, keep, st, detail):
        """Frees request req once a blocking call waited for it (with status st, and detail
        its message if another thread read it) -- unless abort() (from another thread) freed
        the communicator and its requests meanwhile, or the library refuses because req is
        still in flight (its wait was refused: the communicator was used concurrently); then
        it is an orphan, kept with its buffers until it ends. Returns the wait's message,
        read before the free, which may replace this thread's last error."""
        if st and detail is None:
            detail = _text(lib.zcoll_last_error())
        with self._free_lock:
            if self._ptr is not None and _free(req):
                self._orphans.append((req, keep))
        return detail

    def _allreduce_created(self, x, out, op, dtype):
        value = int(op)
        send, recv, count, code, result, keep = _operands(x, out, op.dtype, dtype)
        if self._group is not None:  # its function's exceptions: at the group's end
            self._queue("allreduce", _iallreduce, (send, recv, count, code, value), keep, op)
            return result
        ptr = self._live(self._ptr)
        detail = None
        if get_ident() != _MAIN:
            st = _allreduce(ptr, send, recv, count, code, value)
        else:  # in slices; the request ends with the agreement, as the blocking call does
            st = _iallreduce(ptr, send, recv, count, code, value, self._req_ref)
            if not st:
                r = self._req.value
                try:
                    st, detail = _wait.end(ptr, r, keep + (op,))
                except BaseException:
                    op._take_error()
                    raise
                detail = self._drop(r, keep + (op,), st, detail)
        raise_failed(op, self, "allreduce")
        if st:
            raise error(st, ptr, detail)
        return result

    def iallreduce(self, x, out=None, op=SUM, dtype=None):
        """Starts allreduce(x, out, op) and returns a Request at once; its wait()
        returns the result. x and out belong to the request until it has ended."""
        if self._orphans:
            self._reap()
        created = op if op.__class__ is CreatedOp else None
        send, recv, count, code, result, keep = _operands(x, out, created and created.dtype,
                                                          dtype)
        req = c_void_p()
        st = _iallreduce(self._live(self._ptr), send, recv, count, code, int(op), byref(req))
        if st:
            raise error(st, self._ptr)
        return Request(self, req.value, keep + (created,), result, created)

    def allreduce_init(self, x, out=None, op=SUM, dtype=None):
        """Plans allreduce(x, out, op) once (local: nothing is sent) and returns a
        PersistentRequest; each start() reduces whatever x holds then into out. x and
        out belong to the request until it is freed."""
        if self._orphans:
            self._reap()
        created = op if op.__class__ is CreatedOp else None
        send, recv, count, code, result, keep = _operands(x, out, created and created.dtype,
                                                          dtype)
        req = c_void_p()
        st = lib.zcoll_allreduce_init(self._live(self._ptr), send, recv, count, code, int(op),
                                      byref(req))
        if st:
            raise error(st, self._ptr)
        return PersistentRequest(self, req.value, keep + (created,), result, created)

    def allreduce_partial_init(self, x, out=None, quorum=None, op=SUM, dtype=None):
        """A partial (quorum) allreduce over x into out (zcoll_allreduce_partial_init):
        each start() offers x to the round forming when it arrives, and the round ends
        with its quorum-th offer (default: every rank); see PartialRequest. Collective:
        every rank passes the same quorum, count, dtype and op (else Mismatch). x and out
        belong to the request until it is freed."""
        if self._orphans:
            self._reap()
        if op.__class__ is CreatedOp:
            raise TypeError("a partial allreduce takes a built-in op")
        send, recv, count, code, result, keep = _operands(x, out, None, dtype)
        req = c_void_p()
        q = self.size if quorum is None else int(quorum)
        st = lib.zcoll_allreduce_partial_init(self._live(self._ptr), send, recv, count, code,
                                              int(op), q, byref(req))
        if st:
            raise error(st, self._ptr)
        r = PartialRequest(self, req.value, keep, result)
        self._partials.add(r)
        return r

    def broadcast(self, x, root=0):
        """Sends root's x to every rank's x, in place (zcoll_broadcast); returns x.

        x: a C-contiguous, writable numpy array or buffer-protocol object, the same
        element count and dtype on every rank (checked: Mismatch). A dtype zcoll does
        not reduce (complex, bool, structured, ...) goes as its bytes. Nothing is copied.
        """
        addr, count, code, a = _buffers.buffer(x)
        if get_ident() == _MAIN or self._group is not None:
            self._sliced(_ibroadcast, (a,), addr, count, code, root)
            return x
        st = _broadcast(self._live(self._ptr), addr, count, code, root)
        if st:
            raise error(st, self._ptr)
        return x

    def ibroadcast(self, x, root=0):
        """Starts broadcast(x, root) and returns a Request at once; its wait() returns x.
        x belongs to the request until it has ended."""
        if self._orphans:
            self._reap()
        addr, count, code, a = _buffers.buffer(x)
        req = c_void_p()
        st = lib.zcoll_ibroadcast(self._live(self._ptr), addr, count, code, root, byref(req))
        if st:
            raise error(st, self._ptr)
        return Request(self, req.value, (a,), x)

    def broadcast_init(self, x, root=0):
        """Plans broadcast(x, root) once (local) and returns a PersistentRequest; each
        start() sends whatever root's x holds then. x belongs to the request until it
        is freed."""
        if self._orphans:
            self._reap()
        addr, count, code, a = _buffers.buffer(x)
        req = c_void_p()
        st = lib.zcoll_broadcast_init(self._live(self._ptr), addr, count, code, root,
                                      byref(req))
        if st:
            raise error(st, self._ptr)
        return PersistentRequest(self, req.value, (a,), x)

    def barrier(self):
        """Returns once every rank has called barrier() (zcoll_barrier); a rank in another
        collective meanwhile makes it raise Mismatch."""
        if get_ident() == _MAIN or self._group is not None:
            self._sliced(lib.zcoll_ibarrier, ())
            return
        st = lib.zcoll_barrier(self._live(self._ptr))
        if st:
            raise error(st, self._ptr) if self._ptr else ValueError("the communicator is closed")

    def ibarrier(self):
        """Starts barrier() and returns a Request at once; its wait() returns None once
        every rank has entered."""
        if self._orphans:
            self._reap()
        req = c_void_p()
        st = lib.zcoll_ibarrier(self._live(self._ptr), byref(req))
        if st:
            raise error(st, self._ptr)
        return Request(self, req.value, (), None)

    def split(self, color, key=0):
        """The communicator of the ranks that pass the same color (an int >= 0), ranked by
        key then by rank here (zcoll_comm_split, MPI_Comm_split); None for color None (or
        zcoll.UNDEFINED). Collective over this communicator. The new one is independent:
        close it (collectively) before or after this one; both may be used at once from
        different threads."""
        c = -1 if color is None else color
        if not isinstance(c, int) or not isinstance(key, int):
            raise TypeError("color and key are ints (color None: no communicator)")
        ptr = c_void_p()
        st = lib.zcoll_comm_split(self._live(self._ptr), c, key, byref(ptr))
        if st:
            raise error(st, self._ptr)
        if not ptr.value:
            return None
        comm = Comm.__new__(Comm)
        comm._adopt(ptr.value)
        return comm

    def vec(self, key, local_tasks, shape, dtype, op=SUM):
        """A key of the task-based vector interface (zcoll.Vec): this rank's local_tasks
        tasks each commit an array of shape and dtype, and get() returns the reduction
        over every task of every rank."""
        from .vec import Vec

        return Vec(self, key, local_tasks, shape, dtype, op)

    def register(self, buf):
        """Registers buf's memory with the transport (zcoll_mem_register); see
        zcoll.MemoryRegion."""
        from .memory import MemoryRegion

        return MemoryRegion(self, buf)

    def empty(self, shape, dtype="float32"):
        """A new array of shape and dtype (uninitialized in numpy's terms; zero-filled) in
        memory this host's ranks can map (zcoll_mem_alloc). It is returned when the array
        and every view of it are gone; one that outlives the communicator stays valid,
        ordinary memory from then on."""
        import numpy as np
        from ctypes import c_char

        dt = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
        if any(n < 0 for n in shape):
            raise ValueError(f"empty: negative dimension in shape {shape}")
        count = 1
        for n in shape:
            count *= n
        nbytes = max(count * dt.itemsize, 1)  # zcoll_mem_alloc takes no 0
        ptr = c_void_p()
        st = lib.zcoll_mem_alloc(self._live(self._ptr), nbytes, byref(ptr))
        if st:
            raise error(st, self._ptr)
        buf = (c_char * nbytes).from_address(ptr.value)
        weakref.finalize(buf, _mem_free, weakref.ref(self), ptr.value)
        return np.frombuffer(buf, dtype=dt, count=count).reshape(shape)

    def _reap(self):
        """Frees the requests dropped in flight that have ended since."""
        for item in list(self._orphans):
            st = lib.zcoll_test(item[0])
            if st != IN_PROGRESS and st != _INVALID_ARG:
                lib.zcoll_request_free(item[0])
                self._orphans.remove(item)

    def close(self):
        """Destroys the communicator (collective: waits for every rank). Requests that
        were dropped in flight are waited for first; one still held in flight makes
        close raise InvalidArgument and leaves the communicator open. Idempotent."""
        ptr = self._ptr
        if ptr is None:
            return
        for r in list(self._partials):  # collective, like close: every rank has them
            r.free()
        self._finish_orphans()
        detail = None
        if get_ident() == _MAIN:  # in slices: Ctrl-C must not wait for the other ranks
            st, detail = _wait.destroy(ptr, lib.zcoll_comm_destroy, _INVALID_ARG, self._closed)
        else:
            st = lib.zcoll_comm_destroy(ptr)
        if st == _INVALID_ARG:  # refused (requests in flight): nothing was destroyed
            raise error(st, ptr, detail)
        self._closed()
        if st:  # destroyed all the same; the message is the call's
            raise error(st, None, detail)

    def abort(self):
        """Tells every peer to give up (they get PeerFailed naming this rank) and frees
        this rank's communicator. Local. May be called from another thread while a call
        on this communicator is blocked (it then raises PeerFailed)."""
        with self._free_lock:  # a blocking call's request is freed before or not at all
            ptr = self._ptr
            if ptr is None:
                return
            st = lib.zcoll_comm_abort(ptr)
            if st:
                raise error(st)
            self._closed()

    def _finish_orphans(self):
        for req, _keep in self._orphans:
            lib.zcoll_wait(req)
            lib.zcoll_request_free(req)
        self._orphans.clear()

    def _closed(self):
        """The library freed the communicator, and with it the requests and
        registrations left: from now on theirs are dangling, and nobody may use them."""
        self._ptr = None
        _open.discard(self)

    def _release(self, abort=False):
        """close() or abort() without raising, for garbage collection and exit."""
        ptr = self._ptr
        if ptr is None:
            return
        if not abort:
            self._finish_orphans()
        if abort or lib.zcoll_comm_destroy(ptr) == _INVALID_ARG:
            lib.zcoll_comm_abort(ptr)
        self._closed()

    def __del__(self):
        try:
            self._release()
        except Exception:  # interpreter shutdown
            pass

    def revoke(self):
        """Marks the communicator revoked from any thread: a call blocked on it raises
        PeerFailed within ~10 ms, and the peers are told. Frees nothing: close() after."""
        st = lib.zcoll_comm_revoke(self._live(self._ptr))
        if st:
            raise error(st)

    def dump(self):
        """The flight recorder (ZCOLL_FLIGHT_RECORDER): the last collectives, to the log and
        to ZCOLL_FLIGHT_RECORDER_FILE.<rank>. From any thread, also while another is blocked
        in a call on this communicator."""
        st = lib.zcoll_comm_dump(self._live(self._ptr))
        if st:
            raise error(st)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif self._ptr is not None:
            # The ranks may no longer be in step: do not wait for them in a collective
            # destroy, tell them and leave.
            self.abort()

    def __repr__(self):
        if self._ptr is None:
            return "<zcoll.Comm closed>"
        return f"<zcoll.Comm rank {self.rank} of {self.size} over {self.transport}>"
