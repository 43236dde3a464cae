package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.Attribute;
import io.iotarget.model.tree.Attributes;
import io.iotarget.model.tree.KernelParse;

import java.util.List;

/**
 * A port's attributes ({@code ports/ID/addr_*}, {@code param_*}) with nvmet's parsers and errnos:
 * the address is fixed while the port listens.
 */
final class PortAttributes {
    private static final int TRADDR_MAX = 256;
    private static final int TRSVCID_MAX = 32;

    static final Attributes<Port> ALL = Attributes.of(List.of(
            Attribute.text("addr_trtype", p -> p.trtype, PortAttributes::writeTrtype),
            Attribute.text("addr_adrfam", p -> p.adrfam, PortAttributes::writeAdrfam),
            Attribute.text("addr_traddr", p -> p.traddr, PortAttributes::writeTraddr),
            Attribute.text("addr_trsvcid", p -> p.trsvcid, PortAttributes::writeTrsvcid),
            // What addr_tsas reads follows addr_trtype; a save keeps tls1.3 alone (before addr_treq, which it resets).
            Attribute.text("addr_tsas", PortAttributes::tsasText, PortAttributes::writeTsas).replayedAs(p -> p.tls ? List.of("tls1.3") : List.of()),
            Attribute.text("addr_treq", PortAttributes::treqText, PortAttributes::writeTreq),
            Attribute.text("param_inline_data_size", p -> Integer.toString(p.inlineDataSize), PortAttributes::writeInlineDataSize),
            Attribute.text("param_max_queue_size", p -> Integer.toString(p.maxQueueSize), PortAttributes::writeMaxQueueSize)));

    private PortAttributes() {}

    private static void requireStopped(Port p, String attribute, String value) throws ControlException {
        if (p.listening()) {
            throw new ControlException(Errno.EACCES, attribute + "=" + value + ": ports/" + p.id
                    + " is enabled (unlink its subsystems before changing attributes)");
        }
    }

    private static void writeTrtype(Port p, String value) throws ControlException {
        requireStopped(p, "addr_trtype", value);
        String v = value.strip();
        if (!v.equals("tcp")) throw KernelParse.invalid("addr_trtype", value, "tcp, the only transport iotarget serves");
        p.trtype = v;
    }

    private static void writeAdrfam(Port p, String value) throws ControlException {
        requireStopped(p, "addr_adrfam", value);
        String v = value.strip();
        if (!v.equals("ipv4") && !v.equals("ipv6")) throw KernelParse.invalid("addr_adrfam", value, "ipv4 or ipv6");
        p.adrfam = v;
    }

    private static void writeTraddr(Port p, String value) throws ControlException {
        String v = value.strip();
        if (v.isEmpty() || v.length() > TRADDR_MAX || v.contains(" ")) throw KernelParse.invalid("addr_traddr", value, "an address of at most 256 characters");
        requireStopped(p, "addr_traddr", value);
        p.traddr = v;
    }

    private static void writeTrsvcid(Port p, String value) throws ControlException {
        String v = value.strip();
        if (v.isEmpty() || v.length() > TRSVCID_MAX || v.contains(" ")) throw KernelParse.invalid("addr_trsvcid", value, "a service id (TCP port) of at most 32 characters");
        requireStopped(p, "addr_trsvcid", value);
        p.trsvcid = v;
    }

    private static String treqText(Port p) {
        return switch (p.treq) {
            case Port.TREQ_REQUIRED -> "required";
            case Port.TREQ_NOT_REQUIRED -> "not required";
            default -> "not specified";
        };
    }

    /**
     * nvmet's values and checks: with addr_tsas=tls1.3 "not specified" is EINVAL and "not
     * required" lets plaintext hosts in too. "required" without tls1.3 is EINVAL here (nvmet
     * takes it, and then tells hosts a secure channel is required that the port does not have).
     */
    private static void writeTreq(Port p, String value) throws ControlException {
        requireStopped(p, "addr_treq", value);
        p.treq = switch (value.strip()) {
            case "not specified" -> {
                if (p.tls) throw new ControlException(Errno.EINVAL, "addr_treq=not specified: addr_tsas is tls1.3 (expected: required or not required)");
                yield Port.TREQ_NOT_SPECIFIED;
            }
            case "not required" -> Port.TREQ_NOT_REQUIRED;
            case "required" -> {
                if (!p.tls) throw new ControlException(Errno.EINVAL, "addr_treq=required: addr_tsas is none, the port has no secure channel (write addr_tsas=tls1.3 first)");
                yield Port.TREQ_REQUIRED;
            }
            default -> throw KernelParse.invalid("addr_treq", value, "not specified, required or not required");
        };
    }

    /** nvmet shows the TCP security type once the transport is tcp, "reserved" before. */
    private static String tsasText(Port p) {
        return !p.trtype.equals("tcp") ? "reserved" : p.tls ? "tls1.3" : "none";
    }

    /**
     * "none" or "tls1.3" (TLS 1.3 with pre-shared keys, {@code hosts/NQN/tls_key}). As in nvmet,
     * tls1.3 turns addr_treq "not specified" into "required", and none resets it.
     */
    private static void writeTsas(Port p, String value) throws ControlException {
        requireStopped(p, "addr_tsas", value);
        if (!p.trtype.equals("tcp")) throw new ControlException(Errno.EINVAL, "addr_tsas=" + value.strip() + ": addr_trtype is not tcp (write it first)");
        switch (value.strip()) {
            case "none" -> {
                p.tls = false;
                p.treq = Port.TREQ_NOT_SPECIFIED;
            }
            case "tls1.3" -> {
                p.tls = true;
                if (p.treq == Port.TREQ_NOT_SPECIFIED) p.treq = Port.TREQ_REQUIRED;
            }
            default -> throw KernelParse.invalid("addr_tsas", value, "none or tls1.3");
        }
    }

    private static void writeInlineDataSize(Port p, String value) throws ControlException {
        requireStopped(p, "param_inline_data_size", value);
        int v = KernelText.integer("param_inline_data_size", value.strip());
        if (v > Sqe.MAX_TRANSFER_BYTES) throw KernelParse.invalid("param_inline_data_size", value, "-1 (transport default) up to " + Sqe.MAX_TRANSFER_BYTES);
        p.inlineDataSize = v;
    }

    private static void writeMaxQueueSize(Port p, String value) throws ControlException {
        requireStopped(p, "param_max_queue_size", value);
        int v = KernelText.integer("param_max_queue_size", value.strip());
        if (v == 0 || v == 1 || v > Port.DEFAULT_MAX_QUEUE_SIZE) {
            throw KernelParse.invalid("param_max_queue_size", value, "-1 (transport default) or 2.." + Port.DEFAULT_MAX_QUEUE_SIZE);
        }
        p.maxQueueSize = v;
    }
}
