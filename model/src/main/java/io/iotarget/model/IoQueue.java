package io.iotarget.model;

/**
 * The tenant queue that issued a request (an NBD connection, an NVMe/TCP IO queue, a volume),
 * as a request sees it: the "task" io.pressure counts. The controller owns the real type
 * (iocontrol's {@code pressure.TenantQueue}, made by {@code Engine.newQueue}); front ends only
 * carry it from their connection to the request, as they carry an {@link IoGroup}.
 */
public interface IoQueue {
}
