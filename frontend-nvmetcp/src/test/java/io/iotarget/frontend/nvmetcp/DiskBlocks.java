package io.iotarget.frontend.nvmetcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/** The reservation tests' view of their file backend's 512-byte blocks: what is on the disk, not what a status said. */
final class DiskBlocks {
    static final int SIZE = 512;

    private DiskBlocks() {
    }

    /** Block {@code lba} of {@code file} as it is now. */
    static byte[] onDisk(Path file, long lba) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(SIZE);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ch.read(b, lba * SIZE);
        }
        return b.array();
    }

    /** A block of {@code fill} bytes. */
    static byte[] filled(byte fill) {
        byte[] b = new byte[SIZE];
        Arrays.fill(b, fill);
        return b;
    }
}
