// Scope: a real SMTP server for tests (the `smtp-server` package) on a free port of 127.0.0.1 that
// accepts every message without authentication or TLS and keeps it, parsed with `mailparser`.
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** One received message. */
export interface ReceivedMail {
  /** Envelope recipients (RCPT TO). */
  to: string[];
  from: string;
  subject: string;
  text: string;
}

/** The running SMTP server. */
export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>` for nodemailer. */
  url: string;
  messages: ReceivedMail[];
  /** Resolves with the first message (past or future) matching `pred`. */
  waitFor(pred: (m: ReceivedMail) => boolean): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/** Start the server. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const waiters: Array<{ pred: (m: ReceivedMail) => boolean; resolve: (m: ReceivedMail) => void }> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          const mail: ReceivedMail = {
            to: session.envelope.rcptTo.map((r) => r.address),
            from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
          };
          messages.push(mail);
          for (const w of waiters.filter((x) => x.pred(mail))) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(mail);
          }
          callback();
        })
        .catch((err: Error) => callback(err));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    waitFor(pred) {
      const found = messages.find(pred);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ pred, resolve }));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The decision link in a notification's text (`…/approver/email/<token>`). */
export function decisionLinkOf(mail: ReceivedMail): string {
  const m = /(https?:\/\/\S+\/approver\/email\/[\w.-]+)/.exec(mail.text);
  if (m === null) throw new Error(`no decision link in mail "${mail.subject}"`);
  return m[1]!;
}
