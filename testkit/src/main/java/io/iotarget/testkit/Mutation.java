package io.iotarget.testkit;

import java.util.Arrays;
import java.util.Random;

/** What a broken client sends, made from a well-formed message: the socket fuzz tests' one mutator. */
public final class Mutation {
    private Mutation() {
    }

    /** One to four bit flips, byte changes, insertions of four random bytes, or a cut. */
    public static byte[] mutate(byte[] bytes, Random random) {
        byte[] b = bytes.clone();
        for (int i = random.nextInt(4) + 1; i > 0 && b.length > 0; i--) {
            int at = random.nextInt(b.length);
            switch (random.nextInt(4)) {
                case 0 -> b[at] ^= (byte) (1 << random.nextInt(8));
                case 1 -> b[at] = (byte) random.nextInt();
                case 2 -> b = Arrays.copyOf(b, at + 1);
                default -> {
                    byte[] longer = new byte[b.length + 4];
                    System.arraycopy(b, 0, longer, 0, at);
                    for (int k = 0; k < 4; k++) longer[at + k] = (byte) random.nextInt();
                    System.arraycopy(b, at, longer, at + 4, b.length - at);
                    b = longer;
                }
            }
        }
        return b;
    }
}
