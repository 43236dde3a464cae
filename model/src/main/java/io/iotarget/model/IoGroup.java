package io.iotarget.model;

/**
 * Who pays for a request: a node of the controller's group tree, as a request sees it.
 * The controller owns the real type; front ends only carry it from the binding (an NBD
 * export's or an NVMe namespace's group) to the request.
 */
public interface IoGroup {
    /** Unique for the life of the process, never reused; 1 is the root (like cgroup ids). */
    long id();

    /** Slash-separated path from the root, "/" for the root. */
    String path();
}
