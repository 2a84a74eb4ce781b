/** What the forms built on a check request (a principal, a resource, an action) do when submitted. */
import { useState } from 'preact/hooks';
import { failureReport } from './api.js';
import type { checkRequestBody, CheckRequestBody } from './views/entity-side.js';

/**
 * A form that sends one request built from a principal, a resource and an action: on submit (or
 * when called without an event, as a replayed check is), the earlier answer and alerts are cleared; fields that do not parse are marked without sending;
 * otherwise `send` answers, or its failure is shown by the fields it concerns (`fields`) and as alerts.
 */
export function useCheckForm<Answer>(fields: string[], send: (body: CheckRequestBody) => Promise<Answer>) {
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [alerts, setAlerts] = useState<string[]>([]);
  const [answer, setAnswer] = useState<Answer | undefined>(undefined);

  const submit = async (event: Event | undefined, request: ReturnType<typeof checkRequestBody>) => {
    event?.preventDefault();
    setAlerts([]);
    setAnswer(undefined);
    setErrors(request.ok ? {} : request.errors);
    if (!request.ok) return;
    try {
      setAnswer(await send(request.body));
    } catch (error) {
      const report = failureReport(error, fields);
      if (report.byField !== undefined) setErrors(report.byField);
      setAlerts(report.alerts);
    }
  };

  return { errors, alerts, answer, submit };
}
