package io.iotarget.frontend.nvmetcp.auth;

/**
 * What one host's authentication uses, as configured for it ({@code hosts/<nqn>/dhchap_*}):
 * its key, the controller's key when the host may ask the controller to prove itself too
 * (null: bidirectional authentication is refused), the HMAC hash and the DH group of the
 * exchange. Immutable; any thread.
 */
public record DhChapCredentials(DhChapSecret hostKey, DhChapSecret controllerKey, DhChapHash hash, DhGroup group) {
    public DhChapCredentials {
        if (hostKey == null || hash == null || group == null) throw new IllegalArgumentException("host key, hash and group are required");
    }
}
