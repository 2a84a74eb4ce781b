/** Register an entity, or view one and change its attributes (merged into or replacing the registered ones). */
import { useEffect, useState } from 'preact/hooks';
import { call, failureReport, ENTITIES, entityPath } from '../api.js';
import { Alerts, ConfirmDelete, Notice, SelectField, TextArea, TextField } from '../components.js';
import { parseAttributes } from '../json-text.js';
import { attributesObject, type Entity } from '../registry-model.js';
import { go, links } from '../routes.js';
import { useCanWrite } from '../access.js';
import { Time } from '../time.js';

const FIELDS = ['uri', 'type', 'attributes'];

function AttributeTable({ entity }: { entity: Entity }) {
  return (
    <table>
      <caption>Registered attributes</caption>
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Value (JSON)</th>
          <th scope="col">Updated</th>
        </tr>
      </thead>
      <tbody>
        {entity.attributes.map((attribute) => (
          <tr key={attribute.key}>
            <td>{attribute.key}</td>
            <td class="mono">{JSON.stringify(attribute.value)}</td>
            <td class="nowrap">
              <Time iso={attribute.updated_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function EntityEditor({ uri }: { uri?: string }) {
  const creating = uri === undefined;
  const canWrite = useCanWrite();
  const [entity, setEntity] = useState<Entity | undefined>(undefined);
  const [newUri, setNewUri] = useState('');
  const [type, setType] = useState('');
  const [attributes, setAttributes] = useState('');
  const [replace, setReplace] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [alerts, setAlerts] = useState<string[]>([]);
  const [saved, setSaved] = useState<string | undefined>(undefined);

  const show = (loaded: Entity) => {
    setEntity(loaded);
    setAttributes(JSON.stringify(attributesObject(loaded), null, 2));
  };

  useEffect(() => {
    if (uri !== undefined) call<Entity>('GET', entityPath(uri)).then(show, (error: Error) => setAlerts([error.message]));
  }, [uri]);

  const save = async (event: Event) => {
    event.preventDefault();
    setAlerts([]);
    setSaved(undefined);
    const parsed = parseAttributes(attributes);
    if (!parsed.ok) return setErrors({ attributes: parsed.message });
    setErrors({});
    try {
      if (creating) {
        const body = { uri: newUri.trim() === '' ? undefined : newUri.trim(), type: type === '' ? undefined : type, attributes: parsed.value ?? {} };
        const registered = await call<Entity>('POST', ENTITIES, body);
        go(links.entity(registered.uri));
      } else {
        show(await call<Entity>('PUT', `${entityPath(uri)}?override=${replace}`, { uri, attributes: parsed.value ?? {} }));
        setSaved(replace ? 'Attributes replaced.' : 'Attributes merged.');
      }
    } catch (error) {
      const report = failureReport(error, FIELDS);
      if (report.byField !== undefined) setErrors(report.byField);
      setAlerts(report.alerts);
    }
  };

  const remove = async () => {
    try {
      await call('DELETE', entityPath(uri!));
      go(links.registry);
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };

  return (
    <section class="narrow">
      <div class="heading-row">
        <h1 tabIndex={-1}>{creating ? 'Register entity' : `Entity ${uri}`}</h1>
        <a href={links.registry}>Registry</a>
        {!creating && canWrite && <ConfirmDelete what={`entity ${uri}`} onConfirm={remove} />}
      </div>
      {saved !== undefined && <Notice>{saved}</Notice>}
      <Alerts messages={alerts} />
      {entity !== undefined && (
        <>
          <p>
            Type: {entity.type ?? '(none)'} · registered <Time iso={entity.registered_at} />
          </p>
          <AttributeTable entity={entity} />
        </>
      )}
      {(creating || entity !== undefined) && (
        <form onSubmit={save} noValidate>
          {creating && (
            <div class="row">
              <TextField label="URI" value={newUri} onValue={setNewUri} error={errors.uri} hint="Left empty, a UUID is generated." placeholder="user:alice" />
              <SelectField label="Type" value={type} onValue={setType} options={['', 'principal', 'resource']} error={errors.type} />
            </div>
          )}
          <TextArea
            label={creating ? 'Attributes (JSON object)' : 'Edit attributes (JSON object)'}
            rows={6}
            value={attributes}
            onValue={setAttributes}
            error={errors.attributes}
            placeholder='{"department": "it"}'
          />
          {!creating && (
            <fieldset class="choice">
              <legend>How to apply them</legend>
              <label>
                <input type="radio" name="apply" checked={!replace} onChange={() => setReplace(false)} /> Merge: update these keys, keep the others
              </label>
              <label>
                <input type="radio" name="apply" checked={replace} onChange={() => setReplace(true)} /> Replace: these become all the attributes
              </label>
            </fieldset>
          )}
          {canWrite && (
            <div class="actions">
              <button type="submit" class="primary">
                {creating ? 'Register entity' : 'Save attributes'}
              </button>
            </div>
          )}
        </form>
      )}
    </section>
  );
}
