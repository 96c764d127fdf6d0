// The TrainJob as YAML in CodeMirror 6 (a chunk of its own, loaded when the YAML tab first opens).
// Problems of three kinds show as lint marks in the text and in a list under it: YAML syntax, the
// server's TrainJob schema, and the server's dry run (`serverCauses`, the Status causes).
import { lintGutter, setDiagnostics } from '@codemirror/lint';
import { yaml } from '@codemirror/lang-yaml';
import { Button, HelperText, HelperTextItem, List, ListItem } from '@patternfly/react-core';
import { basicSetup, EditorView } from 'codemirror';
import { useEffect, useMemo, useRef, useState } from 'react';
import { adoptInsertedStyles } from './cspStyles.js';
import { fieldPath, locate, parseYaml, schemaErrors, trainJobValidator } from './schema.js';

adoptInsertedStyles();

export default function YamlEditor({ initialText, onChange, serverCauses }) {
  const host = useRef(null);
  const view = useRef(null);
  const [text, setText] = useState(initialText);
  const [validator, setValidator] = useState(null);
  const [schemaProblem, setSchemaProblem] = useState('');

  useEffect(() => {
    let live = true;
    trainJobValidator().then((v) => live && setValidator(v),
      (err) => live && setSchemaProblem(`The TrainJob schema could not be read (${err.message}); only the server checks this YAML.`));
    return () => { live = false; };
  }, []);

  useEffect(() => {
    const v = new EditorView({
      parent: host.current,
      doc: initialText,
      extensions: [
        basicSetup, yaml(), lintGutter(),
        // tabindex: axe counts a contenteditable as focusable content of the scroller only with it
        EditorView.contentAttributes.of({ 'aria-label': 'TrainJob YAML', tabindex: '0' }),
        EditorView.updateListener.of((u) => { if (u.docChanged) setText(u.state.doc.toString()); }),
      ],
    });
    view.current = v;
    return () => { v.destroy(); view.current = null; };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- made once: the editor owns its text once made
  }, []);

  const parsed = useMemo(() => parseYaml(text), [text]);
  // eslint-disable-next-line react-hooks/exhaustive-deps -- tells the parent once per parse, not whenever it passes a new onChange
  useEffect(() => { onChange(text, parsed.value); }, [parsed]);

  const problems = useMemo(() => {
    const out = [...parsed.problems];
    if (parsed.value && validator) {
      for (const e of schemaErrors(validator, parsed.value)) {
        const [from, to] = locate(parsed.doc, text, e.path);
        out.push({ from, to, message: `${e.path.join('.') || '(top)'}: ${e.message}`, source: 'schema' });
      }
    }
    if (parsed.value) {
      for (const c of serverCauses || []) {
        const [from, to] = c.field ? locate(parsed.doc, text, fieldPath(c.field)) : [0, 0];
        out.push({ from, to, message: c.field ? `${c.field}: ${c.message}` : c.message, source: 'server' });
      }
    }
    const end = text.length;
    return out.map((p) => ({ ...p, from: Math.min(p.from, end), to: Math.min(Math.max(p.to, p.from), end) }))
      .sort((a, b) => a.from - b.from);
  }, [parsed, validator, serverCauses, text]);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const end = v.state.doc.length;
    v.dispatch(setDiagnostics(v.state, problems.map((p) => ({
      from: Math.min(p.from, end), to: Math.min(p.to, end), severity: 'error', message: p.message, source: p.source,
    }))));
  }, [problems]);

  const jump = (p) => {
    const v = view.current;
    v.dispatch({ selection: { anchor: Math.min(p.from, v.state.doc.length) }, scrollIntoView: true });
    v.focus();
  };
  const lineOf = (pos) => text.slice(0, pos).split('\n').length;

  return (
    <div className="mpijob-yaml">
      <div ref={host} className="mpijob-yaml-editor" />
      {schemaProblem && <HelperText><HelperTextItem variant="warning">{schemaProblem}</HelperTextItem></HelperText>}
      {problems.length > 0 && (
        <section aria-label="Problems in the YAML" className="pf-v6-u-mt-sm" data-testid="yaml-problems">
          <HelperText><HelperTextItem variant="error">{problems.length === 1 ? '1 problem' : `${problems.length} problems`}</HelperTextItem></HelperText>
          <List isPlain>
            {problems.map((p, i) => (
              <ListItem key={`${i}-${p.message}`}>
                <Button variant="link" isInline onClick={() => jump(p)}>Line {lineOf(p.from)}</Button>
                {' '}{p.message} <span className="pf-v6-u-text-color-subtle">({p.source})</span>
              </ListItem>
            ))}
          </List>
        </section>
      )}
    </div>
  );
}
