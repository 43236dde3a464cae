/**
 * Fencing at the storage: each node publishes its RADOS clients' addresses in the cluster's
 * store, and a node that takes over from a dead one blocklists them before it acts
 * ({@link io.iotarget.control.fence.RadosFence}, docs/rbd.md).
 */
package io.iotarget.control.fence;
