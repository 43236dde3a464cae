package io.iotarget.transport;

import java.io.EOFException;

/**
 * A queued file region ({@link Connection#sendFile}) reached past the end of its file: the file
 * shrank after the region was queued (a backend file truncated underneath a read whose reply
 * header had already been queued). The bytes the peer was promised cannot be sent, and an
 * error cannot replace them once the header is queued, so the connection closes with this
 * cause; its handler may count it.
 */
public final class FileRegionCutShortException extends EOFException {
    private static final long serialVersionUID = 1L;

    FileRegionCutShortException(long position, long remaining, long fileBytes) {
        super("a file region of " + remaining + " bytes at " + position + " lies past the end of its file (" + fileBytes
              + " bytes): the file shrank after its reply was queued");
    }
}
