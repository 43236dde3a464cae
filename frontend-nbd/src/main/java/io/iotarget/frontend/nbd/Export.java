package io.iotarget.frontend.nbd;

import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;

import java.util.List;

/**
 * An enabled export as connections see it: immutable, taken when the export was enabled and
 * valid until it is disabled. Everything a connection charges and checks comes from here: the
 * device every request targets and the group that pays for it.
 *
 * @param name        canonical name (a client asking for "" gets the export named
 *                    {@value ExportTree#DEFAULT_EXPORT})
 * @param description free text shown by NBD_OPT_LIST and NBD_INFO_DESCRIPTION
 * @param device      the engine device behind the export
 * @param group       who pays for the export's IO (the bound group, or the root)
 * @param perHost     {@code cgroup_per_host}: each client's IO is charged to the child of
 *                    {@code group} named after it ({@link ClientIdentity#hostIdentity}) instead
 * @param readOnly    writes, trims and write-zeroes fail with EPERM
 * @param tls         only clients that started TLS may see and open it
 * @param allowAnyClient any client may see and open it (over TLS when {@code tls}); when false
 *                    only clients whose certificate is in {@code allowedClients} (nvmet's
 *                    {@code attr_allow_any_host} and {@code allowed_hosts}); false only with {@code tls}
 * @param allowedClients the client certificates and pre-shared keys that may see and open it; empty when {@code allowAnyClient}
 */
record Export(String name, String description, Device device, Group group, boolean perHost, boolean readOnly, boolean tls,
              boolean allowAnyClient, List<AllowedClient> allowedClients) {
    /**
     * Whether {@code client} may see this export (NBD_OPT_LIST) and open it (INFO, GO,
     * EXPORT_NAME): a plaintext client only an export without {@code tls}; a TLS client any
     * export that allows any client, and another only with a certificate on its list — an empty
     * list admits nobody.
     */
    boolean admits(ClientIdentity client) {
        if (!client.tls()) return !tls;
        if (allowAnyClient) return true;
        for (AllowedClient allowed : allowedClients) {
            if (allowed.matches(client)) return true;
        }
        return false;
    }

    /**
     * The transmission flags for this export. Multi-connection is safe: every connection goes
     * through the same engine device and there is no per-connection cache, so a FLUSH or FUA
     * answered on one connection covers writes answered on any other.
     */
    int transmissionFlags(boolean structuredReplies) {
        int flags = NbdWire.TFLAG_HAS_FLAGS | NbdWire.TFLAG_SEND_FLUSH | NbdWire.TFLAG_SEND_FUA
                    | NbdWire.TFLAG_SEND_CACHE | NbdWire.TFLAG_CAN_MULTI_CONN;
        if (readOnly()) {
            flags |= NbdWire.TFLAG_READ_ONLY;
        } else {
            flags |= NbdWire.TFLAG_SEND_TRIM | NbdWire.TFLAG_SEND_WRITE_ZEROES | NbdWire.TFLAG_SEND_FAST_ZERO;
        }
        if (structuredReplies) flags |= NbdWire.TFLAG_SEND_DF;
        return flags;
    }

    /** Read-only by configuration or because the device is. */
    @Override
    public boolean readOnly() {
        return readOnly || device.readOnly();
    }

    /** NBD_INFO_BLOCK_SIZE minimum: 1 unless the backend needs aligned IO (O_DIRECT). */
    int minimumBlockSize() {
        return device.ioAlignment();
    }

    int preferredBlockSize() {
        return Math.max(NbdWire.PREFERRED_BLOCK_SIZE, minimumBlockSize());
    }
}
