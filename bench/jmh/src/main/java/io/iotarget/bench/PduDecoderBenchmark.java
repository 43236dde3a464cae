package io.iotarget.bench;

import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.frontend.nvmetcp.pdu.PduDecoder;
import io.iotarget.frontend.nvmetcp.pdu.PduHandler;
import io.iotarget.frontend.nvmetcp.wire.Sqe;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * What decoding one NVMe/TCP command capsule costs the event loop, per command, in a batch of
 * {@link #BATCH} as one socket read brings them at QD32 ({@link PduDecoder} over a buffer that
 * holds them back to back): {@code read4k}, a CapsuleCmd with a Read SQE (the data will go
 * back in C2HData); {@code write4k}, a CapsuleCmd with a Write SQE and its 4 KiB in the capsule,
 * which the decoder copies into the buffer the handler names (a direct buffer, as the pool's
 * are). {@code digests}: header and data digests (CRC32C) negotiated, so the decoder checks
 * both. The handler reads the SQE's fields the queue routes by (opcode, command id, namespace,
 * LBA, blocks) and keeps them; what the queue does with the command is not measured here.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PduDecoderBenchmark {
    /** Commands per socket read: a host that sends a whole queue of 32 at once. */
    static final int BATCH = 32;
    private static final int BLOCK_BYTES = 4096;

    @Param({"read4k", "write4k"})
    public String command;

    @Param({"false", "true"})
    public boolean digests;

    private final ByteBuffer data = ByteBuffer.allocateDirect(BLOCK_BYTES);
    private final Sink sink = new Sink(data);
    private final PduDecoder decoder = new PduDecoder(sink);
    private ByteBuffer stream;

    @Setup(Level.Trial)
    public void setUp() {
        decoder.digests(digests, digests);
        boolean write = command.equals("write4k");
        int headerBytes = Pdu.CAPSULE_CMD_HLEN + (digests ? Pdu.DIGEST_BYTES : 0);
        int dataBytes = write ? BLOCK_BYTES + (digests ? Pdu.DIGEST_BYTES : 0) : 0;
        stream = ByteBuffer.allocateDirect(BATCH * (headerBytes + dataBytes)).order(ByteOrder.LITTLE_ENDIAN);
        byte[] header = new byte[Pdu.CAPSULE_CMD_HLEN];
        byte[] block = new byte[BLOCK_BYTES];
        CRC32C crc = new CRC32C();
        for (int i = 0; i < BATCH; i++) {
            ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
            int flags = (digests ? Pdu.FLAG_HDGST : 0) | (digests && write ? Pdu.FLAG_DDGST : 0);
            h.put(Pdu.TYPE, (byte) Pdu.TYPE_CAPSULE_CMD).put(Pdu.FLAGS, (byte) flags)
                    .put(Pdu.HLEN, (byte) Pdu.CAPSULE_CMD_HLEN).put(Pdu.PDO, (byte) (write ? headerBytes : 0))
                    .putInt(Pdu.PLEN, headerBytes + dataBytes);
            int sqe = Pdu.CAPSULE_SQE;
            h.put(sqe + Sqe.OPCODE, (byte) (write ? Sqe.OPCODE_WRITE : Sqe.OPCODE_READ))
                    .put(sqe + Sqe.FLAGS, (byte) Sqe.FLAGS_SGL).putShort(sqe + Sqe.COMMAND_ID, (short) i)
                    .putInt(sqe + Sqe.NSID, 1).putInt(sqe + Sqe.SGL_LENGTH, BLOCK_BYTES)
                    .put(sqe + Sqe.SGL_IDENTIFIER, (byte) (write ? Sqe.SGL_IN_CAPSULE : Sqe.SGL_TRANSPORT))
                    .putLong(sqe + Sqe.CDW10, (long) i * 7919).putInt(sqe + Sqe.CDW12, 0);
            stream.put(header);
            if (digests) {
                crc.reset();
                crc.update(header);
                stream.putInt((int) crc.getValue());
            }
            if (write) {
                stream.put(block);
                if (digests) {
                    crc.reset();
                    crc.update(block);
                    stream.putInt((int) crc.getValue());
                }
            }
        }
        stream.flip();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long decodeBatch() {
        stream.position(0);
        decoder.decode(stream);
        if (sink.failed) throw new IllegalStateException("the benchmark's stream did not decode");
        return sink.routed;
    }

    /** Reads each capsule's SQE as the queue routes it; a write's data goes to one buffer. */
    private static final class Sink implements PduHandler {
        private final ByteBuffer data;
        long routed;
        boolean failed;

        Sink(ByteBuffer data) {
            this.data = data;
        }

        @Override
        public ByteBuffer onHeader(ByteBuffer header, int dataLength) {
            int sqe = Pdu.CAPSULE_SQE;
            int opcode = header.get(sqe + Sqe.OPCODE) & 0xff;
            int commandId = header.getShort(sqe + Sqe.COMMAND_ID) & 0xffff;
            int nsid = header.getInt(sqe + Sqe.NSID);
            long lba = header.getLong(sqe + Sqe.CDW10);
            int blocks = (header.getInt(sqe + Sqe.CDW12) & 0xffff) + 1;
            routed += opcode + commandId + nsid + lba + blocks;
            return dataLength == 0 ? null : data.clear().limit(dataLength);
        }

        @Override
        public void onPdu(ByteBuffer header, boolean dataDigestOk) {
            if (!dataDigestOk) failed = true;
        }

        @Override
        public void onFatal(int fes, int fei) {
            failed = true;
        }
    }
}
