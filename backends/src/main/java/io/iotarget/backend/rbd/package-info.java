/**
 * The {@code rbd} backend: a Ceph RBD image through librados and librbd (Debian's librbd1),
 * called through the FFM API with librbd's asynchronous IO and completion callbacks, and the
 * RADOS client's address and {@code osd blocklist} for fencing. See docs/rbd.md.
 */
package io.iotarget.backend.rbd;
