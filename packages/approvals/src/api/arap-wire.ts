/**
 * Presenters of the reference Access Request Service's answers under `/access/v1`: a stored
 * request as an ARAP Task Handle or Task Status body. The wire itself (schemas and types of every
 * body) is `@countersign/arap`, shared with the gate. Deliberately does not hold any business rule
 * (expiry, four-eyes, state transitions live in `request-lifecycle.ts`).
 */
import { requestUrl, type RequestStatus, type WireApproval, type WireStatusBody, type WireTaskHandle } from '@countersign/arap';

export { requestUrl };

/** What the presenters need from a stored request. */
export interface PresentableRequest {
  id: string;
  status: RequestStatus;
  expiresAtMs: number;
  approval: WireApproval | null;
}

/** Present a stored request as an ARAP Task Handle. */
export function toTaskHandle(record: PresentableRequest, publicBaseUrl: string): WireTaskHandle {
  const self = requestUrl(publicBaseUrl, record.id);
  return {
    id: record.id,
    status: record.status,
    status_endpoint: self,
    expires_at: new Date(record.expiresAtMs).toISOString(),
    links: { self, cancel: `${self}/cancel` },
  };
}

/** Present a stored request as an ARAP Task Status body. */
export function toStatusBody(record: PresentableRequest): WireStatusBody {
  const body: WireStatusBody = {
    id: record.id,
    status: record.status,
    expires_at: new Date(record.expiresAtMs).toISOString(),
  };
  if (record.status === 'approved' && record.approval !== null) body.result = { approval: record.approval };
  return body;
}
