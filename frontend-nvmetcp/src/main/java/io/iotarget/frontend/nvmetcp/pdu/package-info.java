/**
 * NVMe/TCP PDUs on the wire: layouts ({@link io.iotarget.frontend.nvmetcp.pdu.Pdu}), the
 * host-to-controller decoder ({@link io.iotarget.frontend.nvmetcp.pdu.PduDecoder}, a state
 * machine safe at every split point) and the controller-to-host header encoder
 * ({@link io.iotarget.frontend.nvmetcp.pdu.PduEncoder}). No knowledge of commands.
 */
package io.iotarget.frontend.nvmetcp.pdu;
