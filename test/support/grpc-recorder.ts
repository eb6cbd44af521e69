// Scope: a tiny gRPC endpoint for connection tests: an HTTP/2 listener (plain h2c, or TLS that
// requires a client certificate) that records the request headers of every call and answers each
// with an empty protobuf message (a valid `GetSystemInfoResponse`, which is all a Temporal client
// and worker send on connect). Plus a throwaway CA, server and client certificate made with openssl.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createSecureServer, createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One recorded call: the gRPC method path, its headers, and the client certificate's CN over mTLS. */
export interface RecordedCall {
  path: string;
  headers: IncomingHttpHeaders;
  clientCertCn?: string;
}

/** A running recorder: `address` is `127.0.0.1:<port>`. */
export interface GrpcRecorder {
  address: string;
  calls: RecordedCall[];
  close(): Promise<void>;
}

/** PEM files of a throwaway CA and a server (`localhost`, 127.0.0.1) and client (`countersign-worker`) certificate it signed. */
export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** Make a CA and two leaf certificates in a fresh temporary folder (openssl; EC P-256, v3 extensions). */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-pki-'));
  const f = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=countersign-test-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  const leaf = (name: string, cn: string, ext: string) => {
    ssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.csr`),
      '-subj',
      `/CN=${cn}`,
    );
    writeFileSync(f(`${name}.ext`), ext);
    ssl(
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f(`${name}.pem`),
      '-days',
      '2',
      '-extfile',
      f(`${name}.ext`),
    );
  };
  leaf(
    'server',
    'localhost',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n',
  );
  leaf('client', 'countersign-worker', 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n');
  return {
    dir,
    caCert: f('ca.pem'),
    serverCert: f('server.pem'),
    serverKey: f('server.key'),
    clientCert: f('client.pem'),
    clientKey: f('client.key'),
  };
}

/** Start a recorder on 127.0.0.1 (a free port). With `tls`, it speaks TLS and refuses clients without a certificate from `tls.caCert`. */
export async function startGrpcRecorder(tls?: TestPki): Promise<GrpcRecorder> {
  const calls: RecordedCall[] = [];
  const server: Http2Server = tls
    ? createSecureServer({
        key: readFileSync(tls.serverKey),
        cert: readFileSync(tls.serverCert),
        ca: readFileSync(tls.caCert),
        requestCert: true,
        rejectUnauthorized: true,
        ALPNProtocols: ['h2'],
      })
    : createServer();
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    const socket = stream.session?.socket as TLSSocket | undefined;
    const cn = tls && socket?.getPeerCertificate ? socket.getPeerCertificate().subject?.CN : undefined;
    calls.push({ path: String(headers[':path']), headers, ...(typeof cn === 'string' ? { clientCertCn: cn } : {}) });
    stream.on('data', () => undefined);
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.from([0, 0, 0, 0, 0])); // uncompressed, zero-length message
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const sessions = new Set<{ destroy(): void }>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    address: `127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
}
