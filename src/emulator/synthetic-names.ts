/** Names for generated members: common Japanese family and given names with their kana, and a few English ones. */

export interface NamePart {
  name: string;
  kana: string;
}

export interface GivenName extends NamePart {
  gender: '男性' | '女性';
}

const parts = (list: string): NamePart[] =>
  list.split(' ').map((pair) => {
    const [name, kana] = pair.split(':') as [string, string];
    return { name, kana };
  });

export const FAMILY_NAMES = parts(
  '佐藤:サトウ 鈴木:スズキ 高橋:タカハシ 田中:タナカ 伊藤:イトウ 渡辺:ワタナベ 山本:ヤマモト 中村:ナカムラ 小林:コバヤシ ' +
    '加藤:カトウ 吉田:ヨシダ 山田:ヤマダ 佐々木:ササキ 山口:ヤマグチ 松本:マツモト 井上:イノウエ 木村:キムラ 林:ハヤシ ' +
    '斎藤:サイトウ 清水:シミズ 山崎:ヤマザキ 森:モリ 池田:イケダ 橋本:ハシモト 阿部:アベ 石川:イシカワ 前田:マエダ 藤田:フジタ',
);

const given = (list: string, gender: GivenName['gender']): GivenName[] => parts(list).map((p) => ({ ...p, gender }));

export const GIVEN_NAMES: GivenName[] = [
  ...given('翔太:ショウタ 大輔:ダイスケ 健太:ケンタ 拓也:タクヤ 直樹:ナオキ 誠:マコト 蓮:レン 悠斗:ユウト 和也:カズヤ 浩二:コウジ', '男性'),
  ...given('美咲:ミサキ 陽子:ヨウコ 彩:アヤ 結衣:ユイ 由美:ユミ 真由美:マユミ 葵:アオイ 花子:ハナコ 愛:アイ 恵子:ケイコ', '女性'),
];

/** English names, written given name first as they are usually registered. */
export const ENGLISH_NAMES: (GivenName & { family: NamePart })[] = [
  { name: 'Emily', kana: 'エミリー', gender: '女性', family: { name: 'Clark', kana: 'クラーク' } },
  { name: 'James', kana: 'ジェームズ', gender: '男性', family: { name: 'Wilson', kana: 'ウィルソン' } },
  { name: 'Olivia', kana: 'オリビア', gender: '女性', family: { name: 'Brown', kana: 'ブラウン' } },
  { name: 'Daniel', kana: 'ダニエル', gender: '男性', family: { name: 'Miller', kana: 'ミラー' } },
  { name: 'Sophie', kana: 'ソフィー', gender: '女性', family: { name: 'Martin', kana: 'マーティン' } },
];

export const DIVISION_NAMES = [
  '営業部 / Sales', '開発部 / Engineering', '管理部 / Administration', 'マーケティング部 / Marketing',
  'カスタマーサクセス部 / Customer Success', '品質保証部 / Quality Assurance', '人事部 / Human Resources', '経理部 / Finance',
];

export const QUALIFICATIONS = [
  '基本情報技術者 / Fundamental IT Engineer', '応用情報技術者 / Applied IT Engineer', '日商簿記2級 / Bookkeeping Grade 2',
  'TOEIC 800', '普通自動車免許 / Driving licence', '衛生管理者 / Health Supervisor', '中小企業診断士 / SME Consultant',
  '宅地建物取引士 / Real Estate Notary', 'AWS Solutions Architect', '社会保険労務士 / Labour Consultant',
];
