package io.iotarget.frontend.nbd;

import io.iotarget.backend.Completion;
import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.IoExecutor;
import io.iotarget.backend.file.FileBackend;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.SharedRead;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Issue 29, hole 4: a buffered file backend cut underneath a read. What libnbd's client reads is
 * EIO — never a reply short of the bytes its header promised, never a hang — and the connection
 * goes on serving what the file still holds.
 */
class ShrunkFileReadTest {
    private static final int KiB = 1 << 10;
    private static final String PYTHON = "/usr/bin/python3";

    /**
     * A file backend whose next read answered with a page-cache region (sendfile) is followed by a
     * truncate of the file to {@code shrinkTo}: the file is cut between the read and its reply,
     * as another process might cut it, at the one moment the reply has not been queued yet.
     */
    private static final class CutAfterRegionRead extends ForwardingBackend {
        private final Path path;
        private final long shrinkTo;
        private final AtomicBoolean armed = new AtomicBoolean(true);

        CutAfterRegionRead(FileBackend file, long shrinkTo) {
            super(file);
            this.path = file.path();
            this.shrinkTo = shrinkTo;
        }

        @Override
        public IoStatus start(IoRequest io, IoExecutor executor, Completion done) throws IOException {
            IoStatus status = inner.start(io, executor, done);
            if (io.views() instanceof SharedRead shared && shared.region() != null && armed.compareAndSet(true, false)) {
                try (FileChannel cut = FileChannel.open(path, StandardOpenOption.WRITE)) {
                    cut.truncate(shrinkTo);
                }
            }
            return status;
        }
    }

    @Test
    void shouldAnswerEioToAReadWhoseFileShrankBeforeItsReplyAndServeWhatRemains(@TempDir Path dir) throws Exception {
        Tools.require("libnbd's Python binding (python3-libnbd)", "/usr/lib/python3/dist-packages/nbd.py");
        Path file = dir.resolve("disk.img");
        byte[] content = new byte[1024 * KiB];
        new Random(294).nextBytes(content);
        Files.write(file, content);                         // in the page cache: reads of 64 KiB and more are answered with regions
        String head = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(java.util.Arrays.copyOf(content, 128 * KiB)));
        try (TestTarget t = new TestTarget()) {
            t.export("cut", new CutAfterRegionRead(FileBackend.open(file, 512, false, false), 256 * KiB), false);
            String out = Tools.ok(120, PYTHON, "-c", "import nbd, hashlib\nh = nbd.NBD()\nh.connect_uri(\"" + t.uri("cut") + "\")\n" + """
                    def read(length, offset):
                        try:
                            return hashlib.sha256(h.pread(length, offset)).hexdigest()
                        except nbd.Error as e:
                            return e.errno
                    print(read(512 << 10, 0))                 # the file is cut to 256 KiB between this read and its reply
                    print(read(128 << 10, 0))                 # inside what is left: the data
                    print(read(128 << 10, 512 << 10))         # past the new end, through the ordinary read path
                    """);
            assertEquals("EIO\n" + head + "\nEIO", out.strip(), "the cut read, then a read inside the file, then one past its end");
            assertEquals(1, t.server.counters().counter(NbdCounter.SHRUNK_FILE_READS), "the cut read is counted");
            assertEquals(0, t.server.unexpectedErrors());
        }
    }
}
