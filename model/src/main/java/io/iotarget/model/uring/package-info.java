/**
 * An io_uring owned by one event-loop thread, shared by the layers that run on that thread: the
 * transport waits in it for sockets (a poll of its selector's epoll descriptor) and the file
 * backend puts on it the disk IO it starts there, so both complete in one wait, on that thread.
 * It lives in model because both ends of the request path use it and neither may depend on the
 * other: {@link io.iotarget.model.uring.LoopRing#current()} is how a backend finds the ring of
 * the loop it runs on.
 */
package io.iotarget.model.uring;
